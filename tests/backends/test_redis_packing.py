"""Commands packed by hiredis (backends.redis_packing) are the bytes redis-py packs, and a
client built by `redis_clients.connect` talks to a real Redis with them."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from gateway.foundation.backends.redis_clients import connect
from gateway.foundation.backends.redis_packing import HiredisPackingConnection

COMMANDS = [
    ("SET", "gw:k", "välue"),
    (b"XACK", b"gw:stream:0", "evaluator", *(f"17646624{i:05d}-0" for i in range(600))),
    ("CONFIG GET", "maxmemory"),
    (b"CONFIG GET", b"maxmemory"),
    ("EVALSHA", "0" * 40, 2, "k1", "k2", 1, 0.1, 1e20, -3, b"\x00\xff" * 5000),
    ("SET", "gw:big", memoryview(b"x" * 70_000)),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_packed_bytes_are_redis_pys(command: tuple[object, ...]) -> None:
    ours = b"".join(HiredisPackingConnection().pack_command(*command))
    theirs = b"".join(Connection().pack_command(*command))
    assert ours == theirs


@pytest.mark.parametrize("bad", [None, True])
def test_an_argument_redis_py_refuses_is_still_refused(bad: object) -> None:
    with pytest.raises(DataError):
        HiredisPackingConnection().pack_command("SET", "gw:k", bad)


def test_a_client_round_trips_through_the_packer(redis_url: str) -> None:
    async def main() -> None:
        client = connect(redis_url, cluster=False)
        try:
            assert client.connection_pool.connection_class is HiredisPackingConnection
            key = f"gw-test-packing:{uuid.uuid4().hex}"  # this test's own, deleted below
            value = "välue".encode() * 10_000
            await client.set(key, value, ex=60)
            assert await client.get(key) == value
            async with client.pipeline(transaction=False) as pipe:
                pipe.incrby(key + ":n", 2)
                pipe.get(key + ":n")
                pipe.delete(key, key + ":n")
                assert await pipe.execute() == [2, b"2", 2]
        finally:
            await client.aclose()

    asyncio.run(main())
