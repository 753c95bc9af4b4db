"""The ingress end of the two transports without Redis (outbox, pending log): limits and
de-duplication in this process's memory, and the group-commit writer."""
