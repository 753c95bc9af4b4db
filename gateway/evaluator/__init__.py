"""Background evaluation: accepted deliveries read from a transport (gateway.transports) ->
SQL records and, for accepted deliveries, runs."""

from gateway.evaluator.delivery_consumer import Consumer

__all__ = ["Consumer"]
