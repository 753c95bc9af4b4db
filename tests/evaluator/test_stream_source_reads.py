"""The stream source reads fewer entries per shard while bodies are large (real Redis)."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

from gateway.foundation.backends.redis_keys import KeySpace
from gateway.webhook_gateway.transports.redis_stream.source import (
    READ_BYTES_PER_SHARD,
    StreamSource,
)


async def _add(redis: Redis, stream: str, count: int, size: int) -> None:
    for n in range(count):
        fields = {"d": f"dlv_{uuid.uuid4().hex}", "w": "whk_1", "t": 1, "n": size, "l": "Accepted"}
        await redis.xadd(stream, {**fields, "i": f"id-{n}", "p": b"{}"})


async def test_large_bodies_shrink_the_read_and_small_ones_restore_it(
    redis_url: str, redis_prefix: str
) -> None:
    redis = Redis.from_url(redis_url)
    keyspace = KeySpace(f"{redis_prefix}:{uuid.uuid4().hex}")
    stream = keyspace.stream(3)
    source = StreamSource(redis, keyspace, batch=16, idle_wait=0.0)
    try:
        big = READ_BYTES_PER_SHARD // 2  # two fit in one read
        await _add(redis, stream, 40, big)
        assert len(await source.read()) == 16  # sizes are learnt from what was read
        assert source.count == 2
        assert len(await source.read()) == 2
        await source.acknowledge(await source.read())  # 20 of 40 read so far
        await _add(redis, stream, 40, 1000)
        reads = [len(await source.read()) for _ in range(10)]
        assert reads == [2] * 10  # the other 20 large ones, two at a time
        assert len(await source.read()) == 2  # a read of two small ones restores the count
        assert source.count == 16
        assert len(await source.read()) == 16
    finally:
        await redis.aclose()
