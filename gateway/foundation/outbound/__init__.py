"""What the gateway sends to other services, never lost and retried: a queue in the store that
changes write their messages to in their own transaction (queue.py), a dispatcher that sends
them through each kind's sender with retries (dispatcher.py, backoff.py), the outcomes a sender
answers (outcomes.py), and the HTTP client that calls public addresses only (http.py)."""

from gateway.foundation.outbound.backoff import RetrySchedule
from gateway.foundation.outbound.dispatcher import Dispatcher, Sender
from gateway.foundation.outbound.http import RefusedDestination, outbound_client
from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.foundation.outbound.queue import OutboundMessage, enqueue, release

__all__ = [
    "Delivered",
    "Dispatcher",
    "Failed",
    "OutboundMessage",
    "Outcome",
    "RefusedDestination",
    "RetryLater",
    "RetrySchedule",
    "Sender",
    "enqueue",
    "outbound_client",
    "release",
]
