"""The pending-log transport (no Redis, PostgreSQL or an in-memory SQLite): accepted deliveries
are delivery log rows marked pending until the evaluator claims them. On PostgreSQL it is the
queue every node shares (docs/architecture.md#transports)."""
