"""Test helpers for ingress: webhooks written straight to SQL (the management API is another
module's job), the services' publisher told about changes, and gateways on Redis servers of
their own (testbed.redis_server)."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.security import hash_token, new_webhook_token
from gateway.kernel.settings import Settings
from testbed.procs import free_port
from testbed.redis_server import RedisServer, redis_server
from tests.conftest import make_settings
from tests.support import GatewayClient, World, scaled

# the ingress backends a served gateway runs on: embedded (SQLite alone) and Redis
SERVED_BACKENDS = ("embedded", "redis")
# Request handling no backend takes part in (parsing, authentication, signatures, identities):
# tested on the embedded backend only. What a backend does (de-duplication, rate limits, the
# failed-auth budget, configuration changes, the records it writes) runs on all three.
REQUEST_HANDLING = pytest.mark.parametrize("backend_kind", ["memory"])


@dataclass
class Hook:
    uid: str
    secret: str
    mode: str

    @property
    def path(self) -> str:
        if self.mode == "url_token":
            return f"/webhooks/w/{self.uid}/{self.secret}"
        return f"/webhooks/w/{self.uid}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"} if self.mode == "token" else {}


def add_webhook(
    client: GatewayClient,
    world: World,
    mode: str = "token",
    *,
    scheme: str | None = None,
    secret: str | None = None,
    delivery_id_header: str | None = None,
    secret_name: str | None = None,
) -> Hook:
    async def run(services: Services) -> Hook:
        uid = ids.new_id("wh")
        value = secret or new_webhook_token()
        now = utcnow()
        signed = mode == "signature"
        async with services.database.transaction() as conn:
            await conn.execute(
                insert(t.webhooks).values(
                    uid=uid,
                    factory_uid=world.factory_uid,
                    name=f"hook {uid}",
                    auth_mode=mode,
                    signature_scheme=scheme,
                    token_hash=None if signed or secret_name else hash_token(value),
                    # as the API stores them: a webhook naming a managed secret keeps no
                    # secret of its own (one a definition file declares keeps the value it read)
                    secret_encrypted=(
                        services.secret_box.encrypt(value) if signed and not secret_name else None
                    ),
                    secret_name=secret_name,
                    delivery_id_header=delivery_id_header,
                    enabled=True,
                    config_version=1,
                    created_at=now,
                    updated_at=now,
                )
            )
        await services.config_publisher.webhook_changed(uid, 1)
        return Hook(uid, value, mode)

    return client.run(run)


def change_webhook(client: GatewayClient, uid: str, **values: Any) -> None:
    """What the management API does: commit config_version + 1, then publish it."""

    async def run(services: Services) -> None:
        async with services.database.transaction() as conn:
            version = (
                await conn.execute(
                    select(t.webhooks.c.config_version).where(t.webhooks.c.uid == uid)
                )
            ).scalar_one()
            await conn.execute(
                update(t.webhooks)
                .where(t.webhooks.c.uid == uid)
                .values(config_version=version + 1, updated_at=utcnow(), **values)
            )
        await services.config_publisher.webhook_changed(uid, version + 1)

    client.run(run)


def redis_url_for(kind: str, request: Any, redis_url: str) -> str:
    """The shared Redis, or a node of the test run's Redis Cluster (started when first asked)."""
    if kind == "redis-cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    return redis_url


def backend_settings(
    kind: str, database_url: str, redis_url: str, redis_prefix: str, **env: str
) -> Settings:
    env.setdefault("evaluator", "off")
    if kind == "redis-cluster":  # redis_url: a node of the cluster
        env["redis_cluster"] = "1"
    if kind in ("redis", "redis-cluster"):
        return make_settings(
            database_url, redis_url, prefix=f"{redis_prefix}:{uuid.uuid4().hex}", **env
        )
    return make_settings(database_url, **env)


@contextmanager
def gateway_on_transport(
    request: Any, transport: str, sqlite_store: Any, redis_url: str, redis_prefix: str
) -> Iterator[GatewayClient]:
    """A served gateway on `transport`, `<backend>+<store>` (memory+sqlite, redis+postgresql,
    redis-cluster+postgresql...), its evaluator off: the tests drive the consumer."""
    kind, _, store = transport.partition("+")
    db = request.getfixturevalue("postgres_url") if store == "postgresql" else sqlite_store()
    url = redis_url_for(kind, request, redis_url)
    with GatewayClient.running(backend_settings(kind, db, url, redis_prefix)) as client:
        yield client


@contextmanager
def gateway_on_own_redis(
    database_url: str, *redis_args: str
) -> Iterator[tuple[GatewayClient, Hook, RedisServer]]:
    """A gateway (evaluator off) on a Redis of its own, with one token webhook."""
    with redis_server(*redis_args) as server:
        settings = make_settings(database_url, server.url, evaluator="off")
        with GatewayClient.running(settings) as gw:
            yield gw, add_webhook(gw, World.create(gw)), server


def gateway_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env.update({f"GATEWAY_{k.upper()}": v for k, v in values.items()})
    return env


SERVE_START_S = 30.0  # migrations, imports and the first answer, on a quiet machine


def serve_gateway(
    env: dict[str, str], port: int, log: Path | None = None, workers: int = 1
) -> subprocess.Popen[bytes]:
    """`gateway serve` as a real OS process (stderr to `log`), with `workers` HTTP workers;
    returns once it answers HTTP (within SERVE_START_S on a quiet machine, longer on a loaded
    one: `scaled`)."""
    import sys

    import httpx

    if log is None:
        stderr: int = subprocess.DEVNULL
    else:
        with log.open("ab") as handle:  # the child keeps its own copy of the descriptor
            stderr = os.dup(handle.fileno())
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gateway",
                "serve",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    finally:
        if log is not None:
            os.close(stderr)
    limit = scaled(SERVE_START_S)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/nope", timeout=2)
            return proc
        except httpx.TransportError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    proc.kill()
    proc.wait(10)
    if proc.returncode not in (None, -9):
        raise RuntimeError(f"gateway exited with status {proc.returncode} while starting")
    raise RuntimeError(f"gateway did not start within {limit:.0f} s")


def stop_gateway(proc: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM and wait `grace` seconds (`scaled` by the host's load; longer than the evaluator
    child's own stop timeout, 15 s); a server that does not stop in time has its stacks
    dumped, then killed."""
    grace = scaled(grace)
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        import sys

        spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
        stacks = "(py-spy not installed)"
        if os.path.exists(spy):
            dump = ["sudo", "-n"] if os.geteuid() else []
            run = subprocess.run(
                [*dump, spy, "dump", "--pid", str(proc.pid)], capture_output=True, text=True
            )
            stacks = run.stdout + run.stderr
        proc.kill()
        proc.wait(10)
        raise AssertionError(
            f"gateway did not stop within {grace:.0f} s of SIGTERM:\n{stacks}"
        ) from None


@dataclass(frozen=True)
class Prepared:
    """What `prepare_world` made: a token webhook, its factory (no foreman), a user and an agent
    of the same team, with their API keys."""

    webhook_uid: str
    factory_uid: str
    user_key: str
    agent_key: str


async def prepare_world(settings: Settings, token: str) -> Prepared:
    """Migrate the store and add a team with a user, an agent, a factory and one token webhook
    (before any server runs on it)."""
    from gateway.foundation.accounts import factories, identities
    from gateway.foundation.services import build_services
    from gateway.foundation.store import migrate

    services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "T")
            _, user_key = await identities.create_user(conn, team, f"u{uuid.uuid4().hex}@t.test")
            _, agent_key = await identities.create_agent(conn, team, "A")
            factory = await factories.create_factory(conn, team, "F", None, None)
            uid = ids.new_id("wh")
            now = utcnow()
            await conn.execute(
                insert(t.webhooks).values(
                    uid=uid,
                    factory_uid=factory,
                    name="h",
                    auth_mode="token",
                    token_hash=hash_token(token),
                    enabled=True,
                    config_version=1,
                    created_at=now,
                    updated_at=now,
                )
            )
        return Prepared(uid, factory, user_key, agent_key)
    finally:
        await services.close()


async def prepare_token_webhook(settings: Settings, token: str) -> str:
    """`prepare_world`'s webhook uid."""
    return (await prepare_world(settings, token)).webhook_uid


def tree_peak_rss_kib(pid: int) -> int:
    """The largest peak RSS (VmHWM) among `pid` and its children (the serving process, and
    its workers when there are several)."""
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(c) for c in children.read_text().split()]
    peaks = []
    for each in pids:
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]))
    return max(peaks)


@dataclass(frozen=True)
class Served:
    """A `gateway serve` process, its port and what was prepared in its store."""

    proc: subprocess.Popen[bytes]
    port: int
    prepared: Prepared


@contextmanager
def served_gateway(
    backend: str, tmp: Path, token: str, redis_prefix: str, workers: int = 1, **values: str
) -> Iterator[Served]:
    """`gateway serve` on `backend` (evaluator off) with `workers` HTTP workers, with
    `prepare_world` done; `values` are further settings (GATEWAY_<NAME>). Stopped at the end."""
    from tests.conftest import REDIS_URL

    env = {
        "database_url": f"sqlite:///{tmp}/gw.db",
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "evaluator": "off",
        "log_level": "warning",
        **values,
    }
    redis_url = None
    if backend == "redis":
        redis_url = REDIS_URL
        env |= {"redis_url": redis_url, "redis_prefix": f"{redis_prefix}:{uuid.uuid4().hex}"}
    settings = make_settings(env["database_url"], redis_url, prefix=env.get("redis_prefix", "gw"))
    prepared = asyncio.run(prepare_world(settings, token))
    port = free_port()
    proc = serve_gateway(gateway_env(**env), port, tmp / "serve.log", workers)
    try:
        yield Served(proc, port, prepared)
    finally:
        stop_gateway(proc)
