"""Deliveries submitted in one event-loop turn reach a real Redis as one SUBMIT call (per hash
slot on Redis Cluster), each with the outcome it would have had alone: de-duplication and the
rate window run in order inside the group, a Redis error of one delivery is its own, and a
script cache flushed under a group is loaded again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis

from gateway.foundation.backends.contract import (
    RATE_LIMIT,
    SHARDS,
    Outcome,
    Submission,
    Target,
    Verdict,
)
from gateway.foundation.backends.resp_client import RespClient
from gateway.foundation.backends.resp_cluster import ClusterRespClient
from gateway.kernel.errors import Unavailable
from gateway.webhook_gateway.transports.redis_stream import submit_groups
from gateway.webhook_gateway.transports.redis_stream.ingress import HOT_SCRIPTS, RedisBackend
from testbed.redis_cluster import ClusterServers
from testbed.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    """A Redis of this module's own: its command counts are ours alone."""
    with redis_server() as server:
        yield server


def _delivery(target: Target, identity: str | None = None, size: int = 1000) -> Submission:
    identity = identity or uuid.uuid4().hex
    body = b'{"identity": "%b", "pad": "%b"}' % (identity.encode(), b"x" * (size - 60))
    return Submission(target, f"dl_{uuid.uuid4().hex}", identity, body, True)


def _script_calls(redis: Redis) -> int:
    stats = redis.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def _together(backend: RedisBackend, deliveries: list[Submission]) -> list[Outcome]:
    """Submitted in one loop turn, as requests whose bodies completed together are."""
    return await asyncio.gather(*(backend.submit(d) for d in deliveries))


def _targets(count: int) -> list[Target]:
    return [Target(f"wh_{uuid.uuid4().hex[:12]}", 1, n % SHARDS) for n in range(count)]


def _commands(redis: Redis) -> dict[str, int]:
    stats = redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}


async def test_a_group_reads_and_writes_what_its_deliveries_share_once(
    own_redis: RedisServer,
) -> None:
    """20 deliveries to one webhook in one call: the config version, the clock and the backlog
    are read once, the rate window pushed and expired once, the backlog raised once; each
    delivery costs its own window check, de-duplication, stream entry and pending-index field."""
    backend = RedisBackend(RespClient(own_redis.url, scripts=HOT_SCRIPTS), "cmd", 60, 100_000)
    redis = own_redis.client()
    try:
        target = _targets(1)[0]
        await backend.submit(_delivery(target))  # connected, scripts loaded
        redis.config_resetstat()
        outcomes = await _together(backend, [_delivery(target, size=10) for _ in range(20)])
        assert [o.verdict for o in outcomes] == [Verdict.ACCEPTED] * 20
        calls = _commands(redis)
        calls.pop("config|resetstat", None)
        calls.pop("info", None)
        assert calls.pop("evalsha") == 1
        once = {"time": 1, "get": 2, "lpush": 1, "pexpire": 1, "incrby": 1}
        each = {"lindex": 20, "set": 20, "xadd": 20, "hset": 20}
        assert calls == once | each
        # what was written is what 20 calls of one delivery write
        rate_key = backend.keyspace.webhook(target.webhook_uid, target.shard).rate
        assert redis.llen(rate_key) == 21 and 0 < redis.pttl(rate_key) <= 60_000
        assert int(redis.get(backend.keyspace.backlog(target.shard)) or 0) == 21
        assert redis.hlen(backend.keyspace.pending(target.webhook_uid, target.shard)) == 21
    finally:
        redis.close()
        await backend.close()


async def test_one_turns_deliveries_are_one_script_call(
    own_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = RedisBackend(RespClient(own_redis.url, scripts=HOT_SCRIPTS), "grp", 20, 100_000)
    redis = own_redis.client()
    try:
        await backend.submit(_delivery(_targets(1)[0]))  # connected, scripts loaded
        redis.config_resetstat()
        small = [_delivery(target, size=10) for target in _targets(4) for _ in range(5)]
        outcomes = await _together(backend, small)
        assert [o.verdict for o in outcomes] == [Verdict.ACCEPTED] * 20
        assert [o.delivery_id for o in outcomes] == [d.delivery_id for d in small]
        assert _script_calls(redis) == 1
        assert sum(redis.xlen(backend.keyspace.stream(s)) for s in range(SHARDS)) == 21
        # a lone delivery leaves alone, in a call of its own
        redis.config_resetstat()
        lone = await backend.submit(_delivery(_targets(1)[0]))
        assert lone.verdict is Verdict.ACCEPTED and _script_calls(redis) == 1
        # a group leaves as soon as it holds MAX_GROUP_BYTES ...
        redis.config_resetstat()
        kilobyte = [_delivery(target) for target in _targets(40)]
        frame = backend._frame(kilobyte[0].target)
        member = len(frame.keys(kilobyte[0])) + len(frame.args(kilobyte[0]))
        per_group = -(-submit_groups.MAX_GROUP_BYTES // member)
        outcomes = await _together(backend, kilobyte)
        assert all(o.verdict is Verdict.ACCEPTED for o in outcomes)
        assert _script_calls(redis) == -(-40 // per_group) >= 3
        # ... or MAX_GROUP deliveries
        monkeypatch.setattr(submit_groups, "MAX_GROUP", 5)
        redis.config_resetstat()
        outcomes = await _together(backend, [_delivery(t, size=10) for t in _targets(12)])
        assert all(o.verdict is Verdict.ACCEPTED for o in outcomes)
        assert _script_calls(redis) == 3
    finally:
        redis.close()
        await backend.close()


async def test_each_delivery_of_a_group_has_the_outcome_it_would_have_alone(
    own_redis: RedisServer,
) -> None:
    backend = RedisBackend(RespClient(own_redis.url, scripts=HOT_SCRIPTS), "grp2", 20, 100_000)
    busy, quiet = _targets(2)
    try:
        # the same identity twice in one group: the second is the first's duplicate
        first, again = _delivery(quiet, "same"), _delivery(quiet, "same")
        # one more than the rate window holds, to one webhook, in the same group
        flood = [_delivery(busy) for _ in range(RATE_LIMIT + 1)]
        not_json = Submission(quiet, f"dl_{uuid.uuid4().hex}", "bad", b"{", False)
        outcomes = await _together(backend, [first, again, *flood, not_json])
        assert outcomes[0] == Outcome(Verdict.ACCEPTED, first.delivery_id)
        assert outcomes[1] == Outcome(Verdict.DUPLICATE, delivery_id=first.delivery_id)
        flooded = [o.verdict for o in outcomes[2:-1]]
        assert flooded == [Verdict.ACCEPTED] * RATE_LIMIT + [Verdict.RATE_LIMITED]
        assert outcomes[-1].verdict is Verdict.INVALID_JSON
        # a webhook whose configuration moved on: stale, the others of the group unaffected
        redis = own_redis.client()
        redis.set(backend.keys(quiet).version, 5)
        redis.close()
        stale, fine = await _together(backend, [_delivery(quiet), _delivery(_targets(1)[0])])
        assert stale.verdict is Verdict.STALE and fine.verdict is Verdict.ACCEPTED
    finally:
        await backend.close()


async def test_a_redis_error_of_one_delivery_is_its_own(own_redis: RedisServer) -> None:
    backend = RedisBackend(RespClient(own_redis.url, scripts=HOT_SCRIPTS), "grp3", 20, 100_000)
    broken, fine = _targets(2)
    redis = own_redis.client()
    try:
        redis.set(backend.keys(broken).rate, "not a list")  # LINDEX on it: WRONGTYPE
        results = await asyncio.gather(
            backend.submit(_delivery(fine)),
            backend.submit(_delivery(broken)),
            backend.submit(_delivery(fine)),
            return_exceptions=True,
        )
        assert isinstance(results[1], Unavailable) and "WRONGTYPE" in str(results[1])
        assert [r.verdict for r in results[::2]] == [Verdict.ACCEPTED] * 2  # type: ignore[union-attr]
        assert redis.xlen(backend.keyspace.stream(fine.shard)) == 2
    finally:
        redis.close()
        await backend.close()


async def test_scripts_flushed_under_a_group_are_loaded_again(own_redis: RedisServer) -> None:
    backend = RedisBackend(RespClient(own_redis.url, scripts=HOT_SCRIPTS), "grp4", 20, 100_000)
    redis = own_redis.client()
    try:
        await backend.submit(_delivery(_targets(1)[0]))
        redis.script_flush()
        outcomes = await _together(backend, [_delivery(t) for t in _targets(10)])
        assert [o.verdict for o in outcomes] == [Verdict.ACCEPTED] * 10
    finally:
        redis.close()
        await backend.close()


async def test_a_lost_redis_fails_the_whole_group_alike(own_redis: RedisServer) -> None:
    with redis_server() as doomed:
        backend = RedisBackend(RespClient(doomed.url, scripts=HOT_SCRIPTS), "grp5", 20, 100_000)
        try:
            await backend.submit(_delivery(_targets(1)[0]))
            doomed.stop()
            results = await asyncio.gather(
                *(backend.submit(_delivery(t)) for t in _targets(5)), return_exceptions=True
            )
            assert all(isinstance(r, Unavailable) for r in results), results
        finally:
            await backend.close()


async def test_on_cluster_one_call_per_slot(
    redis_cluster: ClusterServers, redis_prefix: str
) -> None:
    prefix = f"{redis_prefix}:{uuid.uuid4().hex[:12]}"
    client = ClusterRespClient(redis_cluster.url, scripts=HOT_SCRIPTS)
    backend = RedisBackend(client, prefix, 20, 100_000)
    shards = (1, 2, 3)
    targets = [Target(f"wh_{uuid.uuid4().hex[:12]}", 1, shard) for shard in shards for _ in "ab"]
    try:
        await _together(backend, [_delivery(t) for t in targets])  # slot map, scripts
        for port in redis_cluster.master_ports():
            with redis_cluster.node(port) as node:
                node.config_resetstat()
        outcomes = await _together(backend, [_delivery(t) for t in targets for _ in range(4)])
        assert [o.verdict for o in outcomes] == [Verdict.ACCEPTED] * 24
        calls = 0
        for port in redis_cluster.master_ports():
            with redis_cluster.node(port) as node:
                calls += _script_calls(node)
        assert calls == len(shards)  # each shard's keys share one slot: one call each
    finally:
        await client.close()
