"""Shared fixtures: real PostgreSQL (a database of this test process's own), real Redis (a key
prefix of this process's own), the embedded SQLite default, and a bootstrapped world of team,
user, agent and factory. Set GATEWAY_TEST_POSTGRES_URL / GATEWAY_TEST_REDIS_URL to point
elsewhere.

The suite runs in several processes (pytest-xdist, `scripts/test`); each has its own RUN_ID,
so its own PostgreSQL databases, Redis prefix and Redis Cluster ports. Stores are migrated once
per process: every test that wants a SQLite store gets a copy of a migrated template file (a
copy takes ~1 ms, migrating ~0.2-1 s), and PostgreSQL databases are copies of a template
database migrated once (CREATE DATABASE ... TEMPLATE: 0.26-0.33 s, plus 0.05-0.6 s to drop).
The process's PostgreSQL database is shared by its tests, which make their own teams and ids; a
copy per test would cost those 0.3-0.9 s each, so only tests that count every row or run
processes over the whole store get one (`own_store`). The `client` gateway is shared by a
module's tests on each store in the same way (`world` is a team of the test's own). The tests'
PostgreSQL databases commit without waiting for the WAL to reach the disk (synchronous_commit
off: what a crash of the machine could lose is a test run)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import redis
from hypothesis import settings as hypothesis_settings

from gateway.foundation.store import create_database, migrate
from gateway.kernel.settings import Settings, load_settings
from testbed.postgres import temporary_database
from testbed.redis_cluster import ClusterServers
from testbed.redis_cluster import redis_cluster as start_redis_cluster
from tests.examples import examples
from tests.support import CLI_SECRET_KEY, Cli, GatewayClient, World

POSTGRES_ADMIN_URL = os.environ.get(
    "GATEWAY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("GATEWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# "gw0", "gw1", ... under pytest-xdist; a run in one process is worker 0
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
WORKER_INDEX = int(WORKER.removeprefix("gw")) if WORKER.startswith("gw") else 0
RUN_ID = f"{os.getpid()}_{secrets.token_hex(4)}"

# Property tests assert behaviour, never speed: no per-example deadline (hypothesis' default
# 200 ms fails examples on a busy 2-core machine; timing belongs in benchmarks/). Hypothesis'
# default of 100 examples, a quarter of it under `scripts/test --fast` (tests/examples.py).
hypothesis_settings.register_profile("gateway", deadline=None, max_examples=examples(100))
hypothesis_settings.load_profile("gateway")


POSTGRES_SERVER = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]


def migrate_store(url: str) -> None:
    """Brings the store at `url` (GATEWAY_DATABASE_URL form) to the newest revision."""

    async def run() -> None:
        database = create_database(make_settings(url).database_url)
        try:
            await migrate(database)
        finally:
            await database.close()

    asyncio.run(run())


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """The name of a PostgreSQL database migrated once for this test process, never used
    itself (a template has no connections): databases are made as copies of it."""
    with temporary_database(f"gwtest_{RUN_ID}_template", POSTGRES_SERVER) as url:
        migrate_store(url)
        yield url.rsplit("/", 1)[1]


@pytest.fixture(scope="session")
def postgres_url(postgres_template: str) -> Iterator[str]:
    """This test process's database, migrated: its tests share it (each makes its own teams
    and ids); dropped at the end."""
    copy = temporary_database(
        f"gwtest_{RUN_ID}", POSTGRES_SERVER, template=postgres_template, durable=False
    )
    with copy as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store migrated once for this test process; tests get copies (`sqlite_store`)."""
    path = tmp_path_factory.mktemp("template") / "gateway.db"
    migrate_store(f"sqlite:///{path}")
    assert not path.with_name(path.name + "-wal").exists()  # all in the one file: a copy is whole
    return path


@pytest.fixture
def sqlite_store(sqlite_template: Path, tmp_path: Path) -> Callable[..., str]:
    """`sqlite_store(name="gw.db", directory=tmp_path)`: the URL of a fresh copy of the migrated
    template, for a test that names its store's file (a gateway run without this migrates a new
    file through every revision)."""

    def copy(name: str = "gw.db", directory: Path = tmp_path) -> str:
        target = directory / name
        shutil.copyfile(sqlite_template, target)
        return f"sqlite:///{target}"

    return copy


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


# the tests' Redis Clusters: each test process on the first free loopback ports of a range of
# 40 of its own (cluster bus: port + 10000), worker N from base + 40 N; another test run on the
# machine takes the next free ones in the range
CLUSTER_BASE_PORT = int(os.environ.get("GATEWAY_TEST_CLUSTER_PORT", "18500")) + 40 * WORKER_INDEX
CLUSTER_LAST_PORT = CLUSTER_BASE_PORT + 39


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[ClusterServers]:
    """A 3-master Redis Cluster started for this test process (redis-server and redis-cli must
    be installed: without them the tests that use it fail, they are never skipped). Tests share
    it under key prefixes of their own; it is stopped and its files removed at the end."""
    with start_redis_cluster(CLUSTER_BASE_PORT, 3, last_port=CLUSTER_LAST_PORT) as servers:
        yield servers


@pytest.fixture
def own_store(
    request: pytest.FixtureRequest, sqlite_store: Callable[..., str]
) -> Iterator[Callable[[str], str]]:
    """`own_store("sqlite" | "postgresql")`: the URL of a migrated store no other test uses (a
    copy of the template; a PostgreSQL copy is dropped after the test), for tests that count
    every row or run processes that see the whole store."""
    with contextlib.ExitStack() as stack:

        def make(kind: str) -> str:
            if kind == "sqlite":
                return sqlite_store(f"own-{secrets.token_hex(3)}.db")
            template: str = request.getfixturevalue("postgres_template")
            own = temporary_database(
                f"gwtest_{RUN_ID}_own", POSTGRES_SERVER, template=template, durable=False
            )
            return stack.enter_context(own)

        yield make


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store the tests of `database_url`, `settings`, `client` and `world` run on: each
    runs on both (one parameter, whichever of them a test asks for)."""
    kind: str = request.param
    return kind


@pytest.fixture
def database_url(
    request: pytest.FixtureRequest, store_kind: str, sqlite_store: Callable[..., str]
) -> str:
    """A migrated store: a copy of the SQLite template of the test's own, or this process's
    PostgreSQL database."""
    if store_kind == "sqlite":
        return sqlite_store("gateway.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


# a parameter naming the backend (alone or "+store") whose tests ask for `redis_cluster`
CLUSTER_PARAM = "redis-cluster"


# the fixtures that start, or connect to, a store, Redis or the app (directly or through the
# fixtures they ask for, which pytest's closure of a test's fixtures includes)
SERVICE_FIXTURES = frozenset(
    {
        "postgres_template",
        "sqlite_template",
        "redis_prefix",
        "redis_url",
        "redis_cluster",
        "own_store",
        "fresh_store",  # tests/store/conftest.py
        "http",  # tests/replies/conftest.py: providers' APIs on loopback
        "local_server",  # tests/outbound/test_http.py: a receiver on loopback
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks `cluster` every test that starts or uses the Redis Cluster: by the fixture, or by
    a "redis-cluster" parameter (fixtures that ask for the cluster while running). `scripts/test
    --fast` deselects them (pytest counts them as deselected).

    Marks `service` every test that asks, directly or through other fixtures, for one that
    starts or reaches a store, Redis or the app (SERVICE_FIXTURES). `scripts/test --quick`
    deselects them with the slow and cluster ones, and fails any test it runs that connects to a
    network address or starts a process all the same (`_quick_tier_guard`): a test that does so
    on its own, without those fixtures, says `service` itself (pytestmark)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        on_cluster = any(
            isinstance(value, str) and value.partition("+")[0] == CLUSTER_PARAM for value in params
        )
        fixtures = set(getattr(item, "fixturenames", ()))
        if "redis_cluster" in fixtures or on_cluster:
            item.add_marker(pytest.mark.cluster)
        if fixtures & SERVICE_FIXTURES or on_cluster:
            item.add_marker(pytest.mark.service)


QUICK = os.environ.get("GATEWAY_TEST_QUICK") == "1"  # set by `scripts/test --quick`


@pytest.fixture(autouse=QUICK)
def _quick_tier_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --quick: a test that reaches a network address or starts a process fails, naming
    the marker it lacks, rather than making the quick tier slow or flaky unnoticed."""

    def refused(what: str) -> NoReturn:
        pytest.fail(
            f"{what} under `scripts/test --quick`: this test needs a server or a process; "
            "use the store/Redis/app fixtures (tests/conftest.py, SERVICE_FIXTURES) or mark it "
            "`service` (pytestmark = pytest.mark.service)",
            pytrace=False,
        )

    connect = socket.socket.connect

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.close()  # not left for the collector to warn about in another test
            refused(f"a connection to {address!r}")
        connect(sock, address)

    def guarded_popen(*args: Any, **kwargs: Any) -> NoReturn:
        refused(f"a process ({args[1] if len(args) > 1 else kwargs.get('args')!r})")

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect)
    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_popen)


# pytest-xdist reports no deselected tests: each worker counts those -m left out (they all
# collect the same tests) and the controller says how many, so `--fast` hides nothing
DESELECTED = "gateway_deselected"
_deselected = pytest.StashKey[int]()


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        stash = items[0].config.stash
        stash[_deselected] = stash.get(_deselected, 0) + len(items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: handed to the controller
        output[DESELECTED] = session.config.stash.get(_deselected, 0)


def pytest_testnodedown(node: Any, error: object) -> None:
    stash = node.config.stash
    stash[_deselected] = max(stash.get(_deselected, 0), node.workeroutput.get(DESELECTED, 0))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    count = config.stash.get(_deselected, 0)
    if count and config.getoption("numprocesses", None):  # without xdist pytest says it
        expression = config.getoption("markexpr")
        terminalreporter.write_line(f"{count} deselected by -m {expression!r}, not run")


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


# the deployment shapes docs/operations.md supports, as one process holds them: the embedded
# backend on a SQLite file, Redis beside PostgreSQL (Redis Cluster: tests/cluster)
SHAPES = ("embedded", "redis")


@pytest.fixture(params=SHAPES)
def shape(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def shape_settings(
    request: pytest.FixtureRequest, shape: str, sqlite_store: Callable[..., str]
) -> Callable[..., Settings]:
    """`shape_settings(**env)`: settings of the `shape` under test: a copy of the migrated SQLite
    template, or this process's PostgreSQL database with Redis under a key prefix of its own."""

    def make(**env: str) -> Settings:
        if shape == "embedded":
            return make_settings(sqlite_store(), **env)
        prefix = f"{request.getfixturevalue('redis_prefix')}:{secrets.token_hex(8)}"
        url = request.getfixturevalue("postgres_url")
        return make_settings(url, request.getfixturevalue("redis_url"), prefix=prefix, **env)

    return make


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture(scope="module")
def client(
    request: pytest.FixtureRequest,
    store_kind: str,
    sqlite_template: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayClient]:
    """A gateway (embedded backend, evaluator inline) shared by a module's tests on each store:
    a test makes its own team, users and factory (`world`), as on the PostgreSQL database its
    process's tests share, and leaves the gateway as it found it. Starting and stopping one per
    test took a third of the suite's time. Its store is its own (not `database_url`'s): a
    test's own gateway on `database_url` never shares a SQLite file with it."""
    if store_kind == "sqlite":
        store = tmp_path_factory.mktemp("client") / "gateway.db"
        shutil.copyfile(sqlite_template, store)
        url = f"sqlite:///{store}"
    else:
        url = request.getfixturevalue("postgres_url")
    with GatewayClient.running(make_settings(url)) as gateway_client:
        yield gateway_client


@pytest.fixture
def world(client: GatewayClient) -> World:
    """A team of the test's own (user, agent, factory, and a stranger's team)."""
    return World.create(client)


@pytest.fixture
def cli(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sqlite_store: Callable[..., str],
) -> Cli:
    """The CLI in this process, on a migrated copy at tmp_path/cli.db, in tmp_path (where a .env
    would be read), with no GATEWAY_* variable but the store and the key."""
    for name in [name for name in os.environ if name.startswith("GATEWAY_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GATEWAY_DATABASE_URL", sqlite_store("cli.db"))
    monkeypatch.setenv("GATEWAY_SECRET_KEY", CLI_SECRET_KEY)
    return Cli(capsys, tmp_path / "cli.db")


@pytest.fixture(scope="module")
def shared_world(
    sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """One embedded gateway (SQLite) and world for all the tests of a module that only make
    requests the API refuses before the store has a say (validation, body caps): what cannot
    differ between stores runs once, without a gateway started per test."""
    store = tmp_path_factory.mktemp("shared") / "gateway.db"
    shutil.copyfile(sqlite_template, store)
    with GatewayClient.running(make_settings(f"sqlite:///{store}")) as gateway_client:
        yield World.create(gateway_client)


@pytest.fixture(scope="session", autouse=True)
def _remove_idle_cgroups() -> Iterator[None]:
    """Evaluators this run killed outright (SIGKILL) cannot leave their `cpu.idle` cgroups
    themselves: remove this run's (named after its key prefixes) at the end when empty (rmdir
    refuses while a process is inside). Other gateways' groups on the host are never touched."""
    yield
    from gateway.webhook_gateway.evaluator.cpu_priority import (
        CGROUP_ROOT,
        _cpu_cgroups,
        idle_cgroup_name,
    )

    for base in _cpu_cgroups(Path("/proc/self/cgroup").read_text(), CGROUP_ROOT):
        for group in base.glob(idle_cgroup_name(f"gwtest:{RUN_ID}") + "*"):
            with contextlib.suppress(OSError):
                group.rmdir()
