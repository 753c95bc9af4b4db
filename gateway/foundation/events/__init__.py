"""The event log: what happened, told in the transaction of the change (docs/events.md)."""
