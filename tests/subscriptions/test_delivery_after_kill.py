"""A gateway killed (SIGKILL) after a run ended and before its events were delivered delivers
them after its restart, each once: the events and their messages were committed with the run's
change (an outbox), and the dispatcher of the restarted process sends what is due."""

from __future__ import annotations

import asyncio
import base64
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from gateway.foundation.accounts import identities
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import build_services
from gateway.foundation.store import migrate
from gateway.kernel.settings import Settings
from gateway.platform.runners import claims, finish, registry, reports
from gateway.platform.runners.models import RunEnding
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, serve_gateway
from tests.subscriptions.receiver import receiving
from tests.support import scaled

pytestmark = pytest.mark.slow


async def _in_store(settings: Settings, fn: Any) -> Any:
    services = build_services(settings)
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            return await fn(conn, services)
    finally:
        await services.close()


async def _team(conn: Any, _services: Any) -> tuple[str, str, str]:
    team = await identities.create_team(conn, "Events")
    _, user_key = await identities.create_user(conn, team, f"{team}@example.com")
    agent, _ = await identities.create_agent(conn, team, "Runner")
    return team, user_key, agent


def _end_run(team: str, agent: str, run_id: str) -> Any:
    """The run claimed, started and SUCCEEDED by the runner protocol's own rules."""

    async def go(conn: Any, services: Any) -> None:
        principal = Principal("agent", agent, "Runner", None, frozenset({team}))
        runner = await registry.register(
            conn, principal, name="t", host=None, factory_uid=None, concurrency=1, version=None
        )
        await claims.claim_runs(conn, runner, [run_id], services.settings.run_lease_s)
        await reports.progress(
            conn, runner, run_id, state="INPROGRESS", status_message=None, session_id=None,
            session_link=None,
        )  # fmt: skip
        ending = RunEnding(outcome="SUCCEEDED", status_message=None, error_code=None)
        await finish.finish(conn, runner, run_id, ending, lambda run: f"https://t.test/{run}")

    return go


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_events_committed_before_a_kill_are_delivered_once(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = (
        request.getfixturevalue("postgres_url")
        if store == "postgresql"
        else f"sqlite:///{tmp_path}/gw.db"
    )
    values = {
        "database_url": database,
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "log_level": "warning",
        "outbound_allow_private": "1",
        "evaluator": "inline",
    }
    settings = make_settings(database)
    team, user_key, agent = asyncio.run(_in_store(settings, _team))
    port, subscriber_port = free_port(), free_port()
    env = gateway_env(**values)
    server = serve_gateway(env, port)
    try:
        api = httpx.Client(
            base_url=f"http://127.0.0.1:{port}/api/v1",
            headers={"Authorization": f"Bearer {user_key}"},
            timeout=scaled(10),
        )
        with api:
            hook = f"http://127.0.0.1:{subscriber_port}/hook"  # nobody listens there yet
            made = api.post("/event-subscriptions", json={"url": hook, "events": ["run.*"]})
            assert made.status_code == 201, made.text
            run_id = api.post("/agent/runs", json={"prompt": "p"}).json()["run_id"]
        asyncio.run(_in_store(settings, _end_run(team, agent, run_id)))
        server.kill()  # SIGKILL: no shutdown of any kind
        server.wait(10)
        with receiving(port=subscriber_port) as subscriber:
            server = serve_gateway(env, port)
            got = subscriber.wait_for(5, scaled(60))
            assert len(got) >= 5, f"only {len(got)} delivered"
            subscriber.wait_for(6, scaled(8))  # a repeat would come now
            got = list(subscriber.requests)
    finally:
        server.kill()
        server.wait(10)
    secret = made.json()["secret"]
    bodies = [Webhook(secret).verify(r.body, r.headers) for r in got]
    kinds = Counter(b["type"] for b in bodies if b["data"]["run_id"] == run_id)
    assert kinds == {"run.created": 1, "run.state_changed": 3, "run.succeeded": 1}, kinds
    assert len({r.headers["webhook-id"] for r in got}) == len(got)
