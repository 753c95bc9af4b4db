"""/healthz and /readyz: no credentials; readiness names what fails (store, Redis, the
evaluator's lag), on the embedded backend and with Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from redis.asyncio import Redis

from gateway.foundation.services import Services
from gateway.foundation.store import create_database
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.transports import readiness
from testbed.procs import free_port
from tests.support import GatewayClient, World, eventually


def test_healthz_and_readyz_answer_without_credentials(client: GatewayClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"store": "ok", "evaluator_lag": "ok"}}


def test_readyz_names_every_failing_check(client: GatewayClient) -> None:
    async def broken() -> str | None:
        return "disk on fire"

    async def add(services: Services) -> None:
        services.probes["broken"] = broken

    async def remove(services: Services) -> None:
        del services.probes["broken"]

    client.run(add)
    try:
        answer = client.get("/readyz")
    finally:
        client.run(remove)  # the module's tests share the gateway
    assert answer.status_code == 503
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "not_ready"
    assert answer.json()["detail"] == "broken: disk on fire"


@pytest.fixture
def idle_evaluator(shape_settings: Callable[..., Settings]) -> Iterator[GatewayClient]:
    """A gateway whose evaluator runs elsewhere (off here) and may lag half a second, in each
    supported shape."""
    with GatewayClient.running(shape_settings(evaluator="off", ready_max_lag_s="0.5")) as client:
        yield client


def test_readyz_fails_while_accepted_deliveries_wait_too_long(
    idle_evaluator: GatewayClient,
) -> None:
    client = idle_evaluator
    world = World.create(client)
    hook = world.api("POST", f"/factory/{world.factory_uid}/webhooks",
                     json={"name": "h", "auth_mode": "url_token"}).json()  # fmt: skip
    path = hook["ingress_url"].split("://", 1)[1].split("/", 1)[1]
    assert client.post(f"/{path}", json={"a": 1}).status_code == 202
    assert client.get("/readyz").status_code == 200  # just accepted: not late yet
    late = eventually(lambda: (r := client.get("/readyz")).status_code == 503 and r, timeout=10)
    assert late.json()["detail"].startswith("evaluator_lag: the oldest accepted delivery waits")


@pytest.mark.service
def test_probes_say_why_redis_or_the_store_cannot_be_reached() -> None:
    async def run() -> tuple[str | None, str | None]:
        client = Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)
        try:
            redis = await readiness.redis_probe(client)()
        finally:
            await client.aclose()
        database = create_database(f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/x")
        try:
            store = await readiness.store_probe(database)()
        finally:
            await database.close()
        return redis, store

    redis, store = asyncio.run(run())
    # refused at once, or (redis-py retries) no answer within the probe's time limit
    assert redis is not None and redis.startswith("redis: ")
    assert store is not None and store.startswith("store: ")
