"""Kill the evaluator while deliveries flow, to a custom webhook and to a provider connection:
afterwards there is exactly one run per (delivery, matching automation), none missing and none
doubled."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy import func, select, update

from gateway.foundation.accounts import factories, identities
from gateway.foundation.services import Services, build_services
from gateway.foundation.store import migrate
from gateway.foundation.store import tables as t
from gateway.kernel.settings import Settings
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import AutomationCreate
from gateway.webhook_gateway.connections.management import connect
from gateway.webhook_gateway.connections.models import ConnectionCreate
from gateway.webhook_gateway.webhooks import management as webhooks
from gateway.webhook_gateway.webhooks.models import WebhookCreate
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, serve_gateway
from tests.support import scaled

pytestmark = pytest.mark.slow
DELIVERIES = 40


async def _with_services(settings: Settings, fn: Any) -> Any:
    services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            return await fn(conn, services)
    finally:
        await services.close()


@dataclass
class Provider:
    """A GitHub connection of the factory's team and its automations that match the test's
    deliveries."""

    uid: str
    secret: str
    matching: set[str]


async def _provider(conn: Any, services: Services, team: str, factory: str) -> Provider:
    """GitHub connected; two automations match an `agent` label on acme/api (one by two of
    its triggers: still one run per delivery), one listens for another label."""
    f = t.factories
    repositories = [{"owner": "acme", "name": "api"}]
    await conn.execute(update(f).where(f.c.uid == factory).values(repositories=repositories))
    made = await connect(conn, services, team, ConnectionCreate(provider="github"))
    assert isinstance(made.secret, str)
    labeled = {"provider": "github", "event": "issue_labeled", "filter": {"labels": ["agent"]}}
    any_label = {"provider": "github", "event": "issue_labeled"}
    other = {"provider": "github", "event": "issue_labeled", "filter": {"labels": ["bug"]}}
    matching = set()
    for name, triggers in (("p", [labeled, any_label]), ("q", [any_label]), ("r", [other])):
        body = {"name": name, "prompt": f"do {name}", "enabled": True, "triggers": triggers}
        automation = await automations.create_automation(
            conn, factory, msgspec.convert(body, AutomationCreate)
        )
        if name != "r":
            matching.add(automation.uid)
    return Provider(made.uid, made.secret, matching)


def _github(provider: Provider, n: int) -> tuple[bytes, dict[str, str]]:
    body = b'{"action":"labeled","label":{"name":"agent"},"issue":{"number":%d},' % n
    body += b'"repository":{"full_name":"acme/api"}}'
    signature = hmac.new(provider.secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": f"gh-{n}",
        "X-Hub-Signature-256": f"sha256={signature}",
    }
    return body, headers


async def _world(conn: Any, services: Services) -> tuple[str, str, str, set[str], Provider]:
    """A factory with a foreman, a token webhook and three automations, two of which match;
    a GitHub connection of its team and three provider automations, two of which match."""
    team = await identities.create_team(conn, "T")
    agent, _ = await identities.create_agent(conn, team, "Foreman")
    factory = await factories.create_factory(conn, team, "F", None, agent)
    spec = WebhookCreate(name="events")
    hook = await webhooks.create_webhook(conn, services, factory, team, spec)
    assert isinstance(hook.secret, str)
    token = hook.secret
    matching = set()
    for name, kind in (("a", "match"), ("b", "match"), ("c", "other")):
        trigger = {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": [hook.uid], "payload": {"kind": [kind]}},
        }
        changes = {"name": name, "prompt": f"do {name}", "enabled": True, "triggers": [trigger]}
        spec = msgspec.convert(changes, AutomationCreate)
        made = await automations.create_automation(conn, factory, spec)
        if kind == "match":
            matching.add(made.uid)
    return factory, hook.uid, token, matching, await _provider(conn, services, team, factory)


async def _pairs(conn: Any, _services: Services, delivery_ids: set[str]) -> list[tuple[str, str]]:
    rows = await conn.execute(
        select(t.runs.c.delivery_id, t.runs.c.automation_uid).where(
            t.runs.c.delivery_id.in_(delivery_ids)
        )
    )
    return [tuple(row) for row in rows]


async def _webhook_runs(conn: Any, _services: Services, factory: str) -> int:
    query = select(func.count()).where(
        t.runs.c.factory_uid == factory, t.runs.c.source == "WEBHOOK"
    )
    return int((await conn.execute(query)).scalar_one())


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gateway", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL: the point of this test is a process that gets no chance to clean up."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.mark.parametrize("kind", ["redis+postgresql", "embedded+sqlite"])
def test_evaluator_killed_and_restarted_starts_each_run_once(
    kind: str, tmp_path: Path, redis_url: str, redis_prefix: str, request: pytest.FixtureRequest
) -> None:
    uses_redis = kind.startswith("redis")
    database = (
        request.getfixturevalue("postgres_url") if uses_redis else f"sqlite:///{tmp_path}/gw.db"
    )
    values = {
        "database_url": database,
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "log_level": "warning",
    }
    if uses_redis:
        values |= {"redis_url": redis_url, "redis_prefix": f"{redis_prefix}:{uuid.uuid4().hex}"}
    settings = make_settings(
        database, values.get("redis_url"), prefix=values.get("redis_prefix", "gw")
    )
    factory, hook, token, matching, provider = asyncio.run(_with_services(settings, _world))
    port = free_port()
    # Redis: ingress-only server plus a separate `gateway worker` that we kill.
    # Embedded: one process does both, so the whole server is killed and restarted.
    serve_env = gateway_env(**values, evaluator="off" if uses_redis else "inline")
    server = serve_gateway(serve_env, port)
    evaluator = _worker(gateway_env(**values)) if uses_redis else server
    accepted: dict[str, str] = {}
    accepted_github: dict[str, str] = {}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            for n in range(DELIVERIES):
                if n == DELIVERIES // 3:
                    _kill(evaluator)
                if n == 2 * DELIVERIES // 3:
                    if uses_redis:
                        evaluator = _worker(gateway_env(**values))
                    else:
                        server = evaluator = serve_gateway(serve_env, port)
                if not uses_redis and DELIVERIES // 3 <= n < 2 * DELIVERIES // 3:
                    continue  # the embedded server is down in this stretch
                headers = {"Authorization": f"Bearer {token}", "X-Service-Delivery-Id": f"evt-{n}"}
                body = b'{"kind": "match", "n": %d}' % n
                response = client.post(f"/webhooks/w/{hook}", content=body, headers=headers)
                assert response.status_code == 202, response.text
                accepted[f"evt-{n}"] = response.json()["delivery_id"]
                body, headers = _github(provider, n)
                response = client.post(f"/webhooks/p/{provider.uid}", content=body, headers=headers)
                assert response.status_code == 202, response.text
                accepted_github[f"gh-{n}"] = response.json()["delivery_id"]
            body, headers = _github(provider, 0)  # GitHub's redelivery
            redelivered = client.post(f"/webhooks/p/{provider.uid}", content=body, headers=headers)
            assert redelivered.json()["delivery_id"] == accepted_github["gh-0"]
            again = client.post(
                f"/webhooks/w/{hook}",
                content=b'{"kind": "match"}',
                headers={"Authorization": f"Bearer {token}", "X-Service-Delivery-Id": "evt-0"},
            )
            assert again.status_code == 202 and again.json()["delivery_id"] == accepted["evt-0"]

        expected = {(d, a) for d in accepted.values() for a in matching}
        expected |= {(d, a) for d in accepted_github.values() for a in provider.matching}
        every = set(accepted.values()) | set(accepted_github.values())
        # a dead consumer's entries are reclaimed after 30 s
        deadline = time.monotonic() + 30 + scaled(60)
        pairs: list[tuple[str, str]] = []
        while time.monotonic() < deadline:
            pairs = asyncio.run(_with_services(settings, lambda c, s: _pairs(c, s, every)))
            if len(set(pairs)) >= len(expected):
                break
            time.sleep(1)
        assert set(pairs) == expected
        assert len(pairs) == len(expected)
        runs = asyncio.run(_with_services(settings, lambda c, s: _webhook_runs(c, s, factory)))
        assert runs == len(expected)  # redelivered entries started nothing twice
    finally:
        _kill(server)
        if evaluator is not server:
            _kill(evaluator)
