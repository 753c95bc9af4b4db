"""The delivery log API's view of the Redis stream: accepted deliveries still waiting in their
shard stream (`gateway.foundation.backends.pending_deliveries`), found through the webhook's pending
index."""

from __future__ import annotations

from typing import Any

from gateway.foundation.backends.contract import DeliveryRecord, shard_of
from gateway.foundation.backends.redis_clients import AnyRedis
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.webhook_gateway.transports.redis_stream.entries import body_key, record_of


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
