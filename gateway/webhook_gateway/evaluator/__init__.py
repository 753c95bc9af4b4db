"""Background evaluation: accepted deliveries read from a transport
(gateway.webhook_gateway.transports) -> SQL records and, for accepted deliveries, runs."""

from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer

__all__ = ["Consumer"]
