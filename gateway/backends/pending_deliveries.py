"""Accepted deliveries that are not in the SQL delivery log yet, for the delivery log API.

With Redis, an accepted delivery waits in its shard stream until the evaluator logs it, and
SUBMIT records it in the webhook's pending index (delivery id -> stream entry id); the evaluator
drops it from there once the log has it. The API merges these in, so a delivery id answered with
a 202 is found at once (as pending evaluation), never 404. The embedded backend writes the log
before its 202: nothing is pending outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from gateway.backends.contract import DeliveryRecord, shard_of
from gateway.backends.stream_entries import body_key, record_of

if TYPE_CHECKING:  # the embedded backend runs without loading the Redis client
    from gateway.backends.redis_backend import KeySpace
    from gateway.backends.redis_clients import AnyRedis


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


class RedisPending:
    def __init__(self, redis: AnyRedis, keyspace: KeySpace) -> None:
        self.redis = redis
        self.keyspace = keyspace

    def _keys(self, webhook_uid: str) -> tuple[str, str]:
        shard = shard_of(webhook_uid)
        return self.keyspace.pending(webhook_uid, shard), self.keyspace.stream(shard)

    async def of_webhook(self, webhook_uid: str) -> list[DeliveryRecord]:
        index, stream = self._keys(webhook_uid)
        entry_ids: dict[Any, Any] = await self.redis.hgetall(index)
        if not entry_ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for entry_id in entry_ids.values():
                pipe.xrange(stream, entry_id, entry_id)
            replies: list[Any] = await pipe.execute()
        # an entry the evaluator deleted meanwhile is in the SQL log by now
        return [record_of(fields, None) for reply in replies for _, fields in reply if fields]

    async def find(self, webhook_uid: str, delivery_id: str) -> DeliveryRecord | None:
        index, stream = self._keys(webhook_uid)
        entry_id: Any = await self.redis.hget(index, delivery_id)
        if entry_id is None:
            return None
        found: Any = await self.redis.xrange(stream, entry_id, entry_id)
        for _, fields in found:
            if not fields:
                continue
            key = body_key(fields)
            payload: Any = await self.redis.get(key) if key is not None else fields.get(b"p")
            return record_of(fields, payload)
        return None
