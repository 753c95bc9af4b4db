"""Accepted deliveries that are not in the SQL delivery log yet, for the delivery log API.

With Redis (`gateway.webhook_gateway.transports.redis_stream.pending`), an accepted delivery waits
in its shard stream until the evaluator logs it, and SUBMIT records it in the webhook's pending
index (delivery id -> stream entry id); the evaluator drops it from there once the log has it. The
API merges these in, so a delivery id answered with a 202 is found at once (as pending
evaluation), never 404. The outbox (`gateway.webhook_gateway.transports.outbox.file`) answers the
same for the rows it holds; the pending log's rows are in the log itself.
"""

from __future__ import annotations

from typing import Protocol

from gateway.foundation.backends.contract import DeliveryRecord


class PendingDeliveries(Protocol):
    async def of_webhook(self, webhook_uid: str) -> list[DeliveryRecord]:
        """The webhook's pending deliveries (without payloads)."""
        ...

    async def find(self, webhook_uid: str, delivery_id: str) -> DeliveryRecord | None:
        """One pending delivery with its payload, or None."""
        ...


class NothingPending:
    async def of_webhook(self, webhook_uid: str) -> list[DeliveryRecord]:
        return []

    async def find(self, webhook_uid: str, delivery_id: str) -> DeliveryRecord | None:
        return None
