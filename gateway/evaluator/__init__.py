"""Background evaluation: delivery-log entries (Redis Streams or the SQL outbox) -> SQL records
and, for accepted deliveries, runs."""

from gateway.evaluator.delivery_consumer import Consumer, Entry, Source

__all__ = ["Consumer", "Entry", "Source"]
