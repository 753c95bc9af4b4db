"""Shared fixtures: real PostgreSQL (a database of this run's own), real Redis (a key prefix of
this run's own), the embedded SQLite default, and a bootstrapped world of team, user, agent and
factory. Set GATEWAY_TEST_POSTGRES_URL / GATEWAY_TEST_REDIS_URL to point elsewhere."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import settings as hypothesis_settings

from benchmarks.postgres import temporary_database
from benchmarks.redis_cluster import ClusterServers
from benchmarks.redis_cluster import redis_cluster as start_redis_cluster
from gateway.settings import Settings, load_settings
from tests.support import GatewayClient, World

POSTGRES_ADMIN_URL = os.environ.get(
    "GATEWAY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("GATEWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
RUN_ID = f"{os.getpid()}_{secrets.token_hex(4)}"

# Property tests assert behaviour, never speed: no per-example deadline (hypothesis' default
# 200 ms fails examples on a busy 2-core machine; timing belongs in benchmarks/)
hypothesis_settings.register_profile("gateway", deadline=None)
hypothesis_settings.load_profile("gateway")


POSTGRES_SERVER = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database created for this test run and dropped afterwards."""
    with temporary_database(f"gwtest_{RUN_ID}", POSTGRES_SERVER) as url:
        yield url


@pytest.fixture(scope="session")
def redis_prefix() -> Iterator[str]:
    """A key prefix owned by this test run; every key under it is deleted at the end."""
    prefix = f"gwtest:{RUN_ID}"
    client = redis.Redis.from_url(REDIS_URL)
    client.ping()
    yield prefix
    # keys are hash-tagged, "{gwtest:...:s3}:...", so match the prefix anywhere
    for key in client.scan_iter(match=f"*{prefix}*", count=1000):
        client.delete(key)
    client.close()


@pytest.fixture
def redis_url() -> str:
    return REDIS_URL


# the tests' Redis Clusters: on the first free loopback ports from here up to 39 above it
# (cluster bus: port + 10000); another test run on the machine takes the next free ones
CLUSTER_BASE_PORT = int(os.environ.get("GATEWAY_TEST_CLUSTER_PORT", "18500"))
CLUSTER_LAST_PORT = CLUSTER_BASE_PORT + 39


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[ClusterServers]:
    """A 3-master Redis Cluster started for this test run (redis-server and redis-cli must be
    installed: without them the tests that use it fail, they are never skipped). Tests share
    it under key prefixes of their own; it is stopped and its files removed at the end."""
    with start_redis_cluster(CLUSTER_BASE_PORT, 3, last_port=CLUSTER_LAST_PORT) as servers:
        yield servers


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/gateway.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def make_settings(
    database_url: str, redis_url: str | None = None, prefix: str = "gw", **env: str
) -> Settings:
    env.setdefault("evaluator", "inline")  # tests run app and evaluator in one process
    environ = {
        "GATEWAY_DATABASE_URL": database_url,
        "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "GATEWAY_WEBHOOK_BASE_URL": "https://hooks.example.test",
        "GATEWAY_REDIS_PREFIX": prefix,
        **{f"GATEWAY_{k.upper()}": v for k, v in env.items()},
    }
    if redis_url:
        environ["GATEWAY_REDIS_URL"] = redis_url
    return load_settings(environ)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
def client(settings: Settings) -> Iterator[GatewayClient]:
    with GatewayClient.running(settings) as gateway_client:
        yield gateway_client


@pytest.fixture
def world(client: GatewayClient) -> World:
    return World.create(client)


@pytest.fixture(scope="session", autouse=True)
def _remove_idle_cgroups() -> Iterator[None]:
    """Evaluators this run killed outright (SIGKILL) cannot leave their `cpu.idle` cgroups
    themselves: remove this run's (named after its key prefixes) at the end when empty (rmdir
    refuses while a process is inside). Other gateways' groups on the host are never touched."""
    yield
    from gateway.evaluator.cpu_priority import CGROUP_ROOT, _cpu_cgroups, idle_cgroup_name

    for base in _cpu_cgroups(Path("/proc/self/cgroup").read_text(), CGROUP_ROOT):
        for group in base.glob(idle_cgroup_name(f"gwtest:{RUN_ID}") + "*"):
            with contextlib.suppress(OSError):
                group.rmdir()
