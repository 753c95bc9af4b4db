"""redis-py clients for everything but the ingress hot path: one Redis, or a Redis Cluster.

`redis.asyncio.RedisCluster` routes each command by the hash slot of its key, follows MOVED/ASK
and re-reads the slot map after a failover; its non-transactional pipelines split by node. The
gateway's commands each name keys of one slot, so the same calls serve both.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from redis.asyncio import Redis, RedisCluster

from gateway.foundation.backends.redis_packing import HiredisPackingConnection

AnyRedis: TypeAlias = Redis | RedisCluster


def connect(url: str, *, cluster: bool, socket_timeout: float | None = 5.0) -> AnyRedis:
    """A client for `url`: with `cluster`, any node of the cluster (the rest are discovered)."""
    if cluster:
        return RedisCluster.from_url(
            url, socket_connect_timeout=2, socket_timeout=socket_timeout, protocol=2
        )
    options: dict[str, Any] = {}
    if url.startswith("redis://"):  # rediss:// and unix:// keep their own connection classes
        options["connection_class"] = HiredisPackingConnection
    return Redis.from_url(
        url, socket_connect_timeout=2, socket_timeout=socket_timeout, protocol=2, **options
    )
