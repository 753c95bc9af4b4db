"""The outbox transport (embedded, no Redis, a SQLite file store): accepted deliveries wait in
a SQLite file of their own beside the store until the evaluator moves them into the delivery
log."""
