"""The gateway on a real 3-master Redis Cluster (GATEWAY_REDIS_CLUSTER=1): the 16 shards live on
different nodes, deliveries to every shard are accepted and evaluated exactly once, config
versions published through any node reach every process, and the backlog is bounded per shard.
The ingress checks themselves (order, 60/min, de-duplication) run on the cluster in
tests/ingress (backend_kind "redis-cluster")."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from redis.crc import key_slot
from sqlalchemy import select

from gateway.foundation.backends.contract import SHARDS, shard_of
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.security import hash_token
from gateway.kernel.settings import Settings
from testbed.redis_cluster import ClusterServers
from tests.conftest import make_settings
from tests.evaluator.test_delivery_consumer import automation_for_everything, drain, runs_of
from tests.ingress.hooks import Hook, add_webhook, change_webhook
from tests.support import GatewayClient, World


def cluster_settings(
    database_url: str, cluster: ClusterServers, prefix: str, **env: str
) -> Settings:
    env.setdefault("evaluator", "off")
    unique = f"{prefix}:{uuid.uuid4().hex[:12]}"
    return make_settings(database_url, cluster.url, prefix=unique, redis_cluster="1", **env)


@pytest.fixture
def gwc(
    database_url: str, redis_cluster: ClusterServers, redis_prefix: str
) -> Iterator[GatewayClient]:
    with GatewayClient.running(
        cluster_settings(database_url, redis_cluster, redis_prefix)
    ) as client:
        yield client


def hooks_on_every_shard(gw: GatewayClient, world: World) -> dict[int, Hook]:
    by_shard: dict[int, Hook] = {}
    while len(by_shard) < SHARDS:
        hook = add_webhook(gw, world)
        by_shard.setdefault(shard_of(hook.uid), hook)
    return by_shard


def masters_of(cluster: ClusterServers, keys: list[str]) -> set[int]:
    with cluster.client() as client:
        return {client.get_node_from_key(key).port for key in keys}


def test_every_shard_on_every_node_is_accepted_and_evaluated_once(
    gwc: GatewayClient, redis_cluster: ClusterServers
) -> None:
    keyspace = KeySpace(gwc.services.settings.redis_prefix, per_shard_backlog=True)
    assert len(masters_of(redis_cluster, keyspace.streams())) == 3  # the shards are spread
    world = World.create(gwc)
    hooks = hooks_on_every_shard(gwc, world)
    for hook in hooks.values():
        automation_for_everything(gwc, world, hook.uid)
    accepted = []
    large = b'{"pad":"%b"}' % (b"x" * 40_000)  # travels beside the script (SET + EVALSHA)
    for hook in hooks.values():
        for body in (b'{"n": 1}', large):
            answer = gwc.post(hook.path, content=body, headers=hook.auth)
            assert answer.status_code == 202, answer.text
            accepted.append(answer.json()["delivery_id"])
        again = gwc.post(hook.path, content=b'{"n": 1}', headers=hook.auth)  # a duplicate
        assert again.status_code == 202 and again.json()["delivery_id"] == accepted[-2]

    # 2 accepted + 1 duplicate entry per shard, read from the three nodes
    assert drain(gwc) == 3 * SHARDS
    assert drain(gwc) == 0  # acknowledged: nothing is read twice
    started = runs_of(gwc, accepted)
    assert sorted(d for d, _, _ in started) == sorted(accepted)  # one run per delivery

    async def payloads(services: Services) -> dict[str, bytes]:
        d = t.deliveries
        query = select(d.c.delivery_id, d.c.payload).where(d.c.delivery_id.in_(accepted))
        async with services.database.read() as conn:
            return {row.delivery_id: row.payload for row in await conn.execute(query)}

    logged = gwc.run(payloads)
    assert sorted(len(p) for p in logged.values()) == sorted([8, len(large)] * SHARDS)
    with redis_cluster.client() as client:
        assert sum(client.xlen(stream) for stream in keyspace.streams()) == 0
        counters = [client.get(counter) for counter, _ in keyspace.backlog_counters()]
        assert {int(c or 0) for c in counters} == {0}
        body_keys = list(client.scan_iter(match=f"*{keyspace.prefix}*:body:*", target_nodes="all"))
        assert body_keys == []  # large-body keys go with their acknowledged entries


def test_config_versions_published_on_any_node_reach_every_process(
    sqlite_store: Callable[..., str], redis_cluster: ClusterServers, redis_prefix: str
) -> None:
    settings = cluster_settings(sqlite_store(), redis_cluster, redis_prefix)
    with GatewayClient.running(settings) as one, GatewayClient.running(settings) as two:
        hooks = hooks_on_every_shard(one, World.create(one))
        prefix = settings.redis_prefix
        assert len(masters_of(redis_cluster, [KeySpace(prefix).tag(s) for s in hooks])) == 3
        for hook in hooks.values():
            assert two.post(hook.path, content=b"1", headers=hook.auth).status_code == 202
            # rotated through one (its version published to the shard's node): two refuses the
            # old token and takes the new one at once
            change_webhook(one, hook.uid, token_hash=hash_token(f"wht_rotated_{hook.uid}"))
            assert two.post(hook.path, content=b"2", headers=hook.auth).status_code == 401
            rotated = {"Authorization": f"Bearer wht_rotated_{hook.uid}"}
            assert two.post(hook.path, content=b"3", headers=rotated).status_code == 202


def test_the_backlog_is_bounded_per_shard(
    sqlite_store: Callable[..., str], redis_cluster: ClusterServers, redis_prefix: str
) -> None:
    # 32 across 16 shards: 2 waiting deliveries per shard
    settings = cluster_settings(sqlite_store(), redis_cluster, redis_prefix, max_backlog="32")
    with GatewayClient.running(settings) as gw:
        world = World.create(gw)
        first = add_webhook(gw, world)
        other = add_webhook(gw, world)
        while shard_of(other.uid) == shard_of(first.uid):
            other = add_webhook(gw, world)
        codes = [gw.post(first.path, content=b"%d" % i, headers=first.auth) for i in range(3)]
        assert [c.status_code for c in codes] == [202, 202, 503]
        assert codes[-1].json()["code"] == "backlog_full" and codes[-1].headers["retry-after"]
        # another shard has its own share
        assert gw.post(other.path, content=b"1", headers=other.auth).status_code == 202
        assert drain(gw) == 3
        assert gw.post(first.path, content=b"4", headers=first.auth).status_code == 202


def test_slots_of_the_shards_are_what_the_keys_say() -> None:
    keyspace = KeySpace("gw", per_shard_backlog=True)
    for shard in range(SHARDS):
        keys = keyspace.webhook("wh_x", shard)
        slots = {
            key_slot(key.encode())
            for key in (keys.version, keys.rate, keys.stream, keys.backlog, keys.pending)
        }
        assert slots == {key_slot(keyspace.tag(shard).encode())}, shard


def test_the_de_duplication_marker_lives_7_days_on_the_shards_master(
    gwc: GatewayClient, redis_cluster: ClusterServers
) -> None:
    hook = add_webhook(gwc, World.create(gwc))
    headers = hook.auth | {"X-Service-Delivery-Id": "order-42"}
    first = gwc.post(hook.path, content=b'{"n": 1}', headers=headers)
    again = gwc.post(hook.path, content=b'{"n": 2}', headers=headers)
    assert first.status_code == again.status_code == 202
    assert again.json()["delivery_id"] == first.json()["delivery_id"]
    keyspace = KeySpace(gwc.services.settings.redis_prefix, per_shard_backlog=True)
    keys = keyspace.webhook(hook.uid, shard_of(hook.uid))
    with redis_cluster.client() as client:
        [marker] = client.keys(f"{keys.seen_prefix}*", target_nodes="all")
        assert client.get(marker).decode() == first.json()["delivery_id"]
        assert 7 * 86400 - 60 <= client.ttl(marker) <= 7 * 86400
