"""The hot path's RESP client on a real Redis Cluster: it follows ASK while a slot migrates and
MOVED once it has moved; the ingress scripts then write on the slot's new master.

While a slot migrates, Redis runs a multi-key command on the importing node only when all its
keys are there already (else TRYAGAIN): SUBMIT always names a new de-duplication key, so a
shard whose slot is migrating answers 503 (retry, nothing recorded) until the move is done."""

from __future__ import annotations

import uuid

import pytest
from redis.crc import key_slot

from gateway.foundation.backends.contract import Submission, Target, Verdict
from gateway.foundation.backends.resp_client import ReplyError
from gateway.foundation.backends.resp_cluster import ClusterRespClient, redirection
from gateway.kernel.errors import Unavailable
from gateway.webhook_gateway.transports.redis_stream.ingress import HOT_SCRIPTS, RedisBackend
from testbed.redis_cluster import ClusterServers


def _submission(target: Target, n: int) -> Submission:
    return Submission(target, f"dl_{uuid.uuid4().hex}", f"id-{n}", b'{"n": %d}' % n, True)


def _node_id(cluster: ClusterServers, port: int) -> str:
    with cluster.node(port) as node:
        return str(node.execute_command("CLUSTER", "MYID").decode())


def test_redirections_are_parsed() -> None:
    assert redirection(ReplyError("MOVED 3999 127.0.0.1:6381")) == ("MOVED", ("127.0.0.1", 6381))
    assert redirection(ReplyError("ASK 3999 ::1:6381")) == ("ASK", ("::1", 6381))
    assert redirection(ReplyError("NOSCRIPT No matching script")) is None


async def test_ask_during_a_migration_and_moved_after_it(
    redis_cluster: ClusterServers, redis_prefix: str
) -> None:
    prefix = f"{redis_prefix}:{uuid.uuid4().hex[:12]}"
    client = ClusterRespClient(redis_cluster.url, scripts=HOT_SCRIPTS)
    backend = RedisBackend(client, prefix, 10, 100_000)
    target = Target("wh_routing", 1, 5)
    stream = backend.keyspace.stream(5)
    slot = key_slot(stream.encode())
    with redis_cluster.client() as cluster:
        source = cluster.get_node_from_key(stream).port
    destination = next(p for p in redis_cluster.master_ports() if p != source)
    source_id, destination_id = (_node_id(redis_cluster, p) for p in (source, destination))
    try:
        assert (await backend.submit(_submission(target, 0))).verdict is Verdict.ACCEPTED
        with redis_cluster.node(source) as src, redis_cluster.node(destination) as dst:
            # keys of the slot still on the source are moved first, so the new ones are absent
            # there: the source answers ASK for them
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", destination_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
                src.execute_command("MIGRATE", "127.0.0.1", destination, "", 0, 5000, "KEYS", *keys)
            # ASK followed to the destination (ASKING + EVALSHA), which asks to try again
            with pytest.raises(Unavailable, match="TRYAGAIN") as refused:
                await backend.submit(_submission(target, 1))
            assert refused.value.headers == {"Retry-After": "1"}
            for port in redis_cluster.master_ports():
                with redis_cluster.node(port) as node:
                    node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", destination_id)
            assert dst.execute_command("XLEN", stream) == 1  # the refused one recorded nothing
        # the client still sends to the source, which answers MOVED: followed, map updated
        assert (await backend.submit(_submission(target, 2))).verdict is Verdict.ACCEPTED
        assert client._slots[slot] == ("127.0.0.1", destination)
        with redis_cluster.node(destination) as dst:
            assert dst.execute_command("XLEN", stream) == 2
    finally:
        await client.close()
