"""Two real `gateway serve` processes share one Redis and one database: a config change made
through the API of one is in force on the other's very next request (no TTL, no polling)."""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import build_services
from gateway.foundation.store import migrate
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.ingress.cache import NEGATIVE_TTL
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, serve_gateway

pytestmark = pytest.mark.slow


async def _world(settings: Settings) -> tuple[str, str]:
    """(factory uid, a user API key of its team)."""
    services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "T")
            factory = await factories.create_factory(conn, team, "F", None, None)
            _, key = await identities.create_user(conn, team, "ops@example.com")
        return factory, key
    finally:
        await services.close()


@pytest.fixture
def two_gateways(
    tmp_path: Path, redis_url: str, redis_prefix: str
) -> Iterator[tuple[httpx.Client, httpx.Client, str]]:
    """(client of process A, client of process B, factory uid); both clients carry an API key."""
    db = f"sqlite:///{tmp_path}/gw.db"
    prefix = f"{redis_prefix}:{uuid.uuid4().hex}"
    factory, key = asyncio.run(_world(make_settings(db, redis_url, prefix=prefix)))
    env = gateway_env(
        database_url=db,
        redis_url=redis_url,
        redis_prefix=prefix,
        secret_key=base64.urlsafe_b64encode(b"t" * 32).decode(),
        evaluator="off",
        log_level="warning",
    )
    procs = []
    try:
        ports = [free_port(), free_port()]
        procs = [serve_gateway(env, port) for port in ports]
        auth = {"Authorization": f"Bearer {key}"}
        with (
            httpx.Client(base_url=f"http://127.0.0.1:{ports[0]}", headers=auth) as a,
            httpx.Client(base_url=f"http://127.0.0.1:{ports[1]}", headers=auth) as b,
        ):
            yield a, b, factory
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)


def _deliver(client: httpx.Client, uid: str, token: str, n: int) -> int:
    response = client.post(
        f"/webhooks/w/{uid}",
        content=b'{"n":%d}' % n,
        headers={"Authorization": f"Bearer {token}", "X-Service-Delivery-Id": f"d{n}"},
    )
    return response.status_code


def test_disable_enable_rotate_delete_reach_the_other_process(
    two_gateways: tuple[httpx.Client, httpx.Client, str],
) -> None:
    a, b, factory = two_gateways
    spec = {"name": "h", "auth_mode": "token"}
    created = a.post(f"/api/v1/factory/{factory}/webhooks", json=spec)
    assert created.status_code == 201, created.text
    uid, token = created.json()["uid"], created.json()["secret"]
    assert _deliver(b, uid, token, 1) == 202  # B learns of a webhook created on A (cache miss)

    hook = f"/api/v1/factory/{factory}/webhooks/{uid}"
    assert a.patch(hook, json={"enabled": False}).status_code == 200
    assert _deliver(b, uid, token, 2) == 404  # B held it enabled: the version check refused
    assert a.patch(hook, json={"enabled": True}).status_code == 200
    # re-enabling is the one change not seen at once: B remembers the disabled webhook in its
    # negative cache (no SQL, no Redis per 404) for NEGATIVE_TTL seconds
    time.sleep(NEGATIVE_TTL + 0.1)
    assert _deliver(b, uid, token, 3) == 202

    rotated = a.post(f"{hook}/rotate-secret", json={})
    assert rotated.status_code == 200, rotated.text
    new_token = rotated.json()["secret"]
    assert _deliver(b, uid, token, 4) == 401  # B's cached credential is the old one: refused
    assert _deliver(b, uid, new_token, 5) == 202

    assert a.delete(hook).status_code == 204
    assert _deliver(b, uid, new_token, 6) == 404
    assert _deliver(a, uid, new_token, 7) == 404
