"""A master of a Redis Cluster with replicas killed (SIGKILL) under load: while its replica takes
over, deliveries to its shards are answered 503 with Retry-After (and deliveries to the other
masters' shards keep being accepted); after the failover they are accepted again, and every
delivery answered 202 reaches the delivery log once."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.foundation.backends.redis_keys import KeySpace
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from testbed.redis_cluster import ClusterServers, redis_cluster
from tests.conftest import CLUSTER_BASE_PORT, CLUSTER_LAST_PORT, make_settings
from tests.evaluator.test_delivery_consumer import drain
from tests.ingress.hooks import Hook, add_webhook
from tests.support import GatewayClient, World, scaled

# a cluster of its own (3 masters, a replica each), so that the shared one keeps its shape
FAILOVER_BASE_PORT = CLUSTER_BASE_PORT + 20


@pytest.fixture
def cluster() -> Iterator[ClusterServers]:
    with redis_cluster(FAILOVER_BASE_PORT, 3, replicas=1, last_port=CLUSTER_LAST_PORT) as servers:
        yield servers


@pytest.mark.slow
def test_a_master_killed_mid_load_fails_over_and_loses_nothing_accepted(
    tmp_path: Path, cluster: ClusterServers
) -> None:
    prefix = f"gwtest:{uuid.uuid4().hex[:12]}"
    settings = make_settings(
        f"sqlite:///{tmp_path}/gw.db",
        cluster.url,
        prefix=prefix,
        redis_cluster="1",
        evaluator="off",
    )
    keyspace = KeySpace(prefix, per_shard_backlog=True)
    with GatewayClient.running(settings) as gw:
        world = World.create(gw)
        # 60 deliveries per webhook and minute: enough webhooks for the load
        hooks = [add_webhook(gw, world) for _ in range(200)]
        with cluster.client() as client:
            master_of = {
                h.uid: client.get_node_from_key(keyspace.tag(_shard(h))).port for h in hooks
            }
        victim = master_of[hooks[0].uid]
        on_victim = {h.uid for h in hooks if master_of[h.uid] == victim}

        accepted: list[str] = []
        codes: Counter[tuple[bool, int]] = Counter()
        killed_at = recovered_at = None
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < 30:
            hook = hooks[n % len(hooks)]
            answer = gw.post(hook.path, content=b'{"n": %d}' % n, headers=hook.auth)
            n += 1
            codes[(hook.uid in on_victim, answer.status_code)] += 1
            if answer.status_code == 202:
                accepted.append(answer.json()["delivery_id"])
                if killed_at is not None and hook.uid in on_victim and recovered_at is None:
                    recovered_at = time.monotonic()
            else:
                assert answer.status_code == 503, answer.text
                assert hook.uid in on_victim, answer.text  # other masters' shards carry on
                assert int(answer.headers["retry-after"]) >= 1
                assert answer.headers["content-type"] == "application/problem+json"
            if killed_at is None and n == 300:
                cluster.kill(victim)
                killed_at = time.monotonic()
            if recovered_at is not None and time.monotonic() - recovered_at > 1.0:
                break
        assert killed_at is not None and recovered_at is not None, codes
        assert codes[(True, 503)] > 0, codes  # the kill was seen, answered 503
        assert codes[(False, 503)] == 0, codes
        assert recovered_at - killed_at < 30

        cluster.start_node(victim)  # back, as a replica of the promoted one
        cluster.wait_healthy()
        # reads right after a failover may come back empty while the client relearns the
        # slot map: drain until everything accepted is evaluated (or it stops coming)
        evaluated, deadline = drain(gw), time.monotonic() + scaled(30)
        while evaluated < len(accepted) and time.monotonic() < deadline:
            evaluated += drain(gw)
        assert evaluated == len(accepted)

        async def logged(services: Services) -> list[str]:
            d = t.deliveries
            async with services.database.read() as conn:
                return list((await conn.execute(select(d.c.delivery_id))).scalars())

        in_log = gw.run(logged)
        assert sorted(in_log) == sorted(accepted)  # every 202 is logged, once


def _shard(hook: Hook) -> int:
    from gateway.foundation.backends.contract import shard_of

    return shard_of(hook.uid)
