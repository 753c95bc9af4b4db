"""The stream source reads fewer entries per shard while bodies are large, and assumes the largest
before it has read any (real Redis)."""

from __future__ import annotations

import uuid

import pytest
from redis.asyncio import Redis

from gateway.foundation.backends.redis_keys import KeySpace
from gateway.webhook_gateway.ingress.body import MAX_BODY
from gateway.webhook_gateway.transports.redis_stream import source as source_module
from gateway.webhook_gateway.transports.redis_stream.source import (
    GROUP,
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
        assert source.count == READ_BYTES_PER_SHARD // MAX_BODY == 1  # none read yet
        assert len(await source.read()) == 1
        assert source.count == 2  # sizes are learnt from what was read
        assert len(await source.read()) == 2
        await source.acknowledge(await source.read())  # 5 of 40 read so far
        for _ in range(15):
            assert len(await source.read()) == 2  # 35 of 40
        await _add(redis, stream, 40, 1000)
        assert len(await source.read()) == 2
        assert len(await source.read()) == 2  # 39 of 40
        assert len(await source.read()) == 2  # the last large one and a small one
        assert len(await source.read()) == 2  # a read of two small ones restores the count
        assert source.count == 16
        assert len(await source.read()) == 16
    finally:
        await redis.aclose()


async def test_a_take_over_reads_as_much_as_a_read_and_goes_on_until_none_is_left(
    redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead consumer's entries (read, never acknowledged) are taken over a read's worth at a
    time (large bodies: one a shard), look after look, not one look every CLAIM_EVERY_S."""
    redis = Redis.from_url(redis_url)
    keyspace = KeySpace(f"{redis_prefix}:{uuid.uuid4().hex}")
    stream = keyspace.stream(5)
    monkeypatch.setattr(source_module, "CLAIM_IDLE_MS", 0)
    try:
        await _add(redis, stream, 5, MAX_BODY)
        await redis.xgroup_create(stream, GROUP, id="0", mkstream=True)
        await redis.xreadgroup(GROUP, "dead", {stream: ">"}, count=100)  # and never acknowledged
        source = StreamSource(redis, keyspace, batch=16, idle_wait=0.0)
        taken = []
        for _ in range(5):
            read = await source.read()
            assert len(read) == 1  # one body of the largest size a shard and read
            taken += [entry.record.delivery_id for entry in read]
            await source.acknowledge(read)
        assert len(set(taken)) == 5
        assert await source.read() == []  # nothing left to take over, nothing new
        assert (await redis.xpending(stream, GROUP))["pending"] == 0
    finally:
        await redis.aclose()
