"""Two real `gateway worker` processes on one store start each due slot of a scheduled agent,
and of an automation's inline schedule, exactly once (SQLite file and PostgreSQL)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from gateway.foundation.accounts import factories, identities
from gateway.foundation.store import create_database, migrate
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.schedules import schedules
from gateway.platform.schedules.models import ScheduleCreate
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import AutomationCreate
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env
from tests.support import scaled

pytestmark = pytest.mark.slow  # starts processes of its own

SCHEDULES = 8
AUTOMATIONS = 4
ROUNDS = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, own_store: Callable[[str], str]) -> str:
    """A store of this test's own: the workers must see no other test's work."""
    return own_store(request.param)


def _run(url: str, job: Any) -> Any:
    async def go() -> Any:
        database = create_database(make_settings(url).database_url)
        try:
            return await job(database)
        finally:
            await database.close()

    return asyncio.run(go())


async def _prepare(database: Any) -> list[str]:
    await migrate(database)
    async with database.transaction() as conn:
        team = await identities.create_team(conn, "T")
        user, _ = await identities.create_user(conn, team, "owner@example.com")
        owner = identities.Principal("user", user, "owner", None, frozenset({team}))
        yearly = "0 0 1 1 *"  # only the test's slots
        specs = [
            ScheduleCreate(name=f"s{i}", cron_schedule=yearly, prompt="p") for i in range(SCHEDULES)
        ]
        created = [await schedules.create_schedule(conn, owner, spec, ()) for spec in specs]
        agent, _ = await identities.create_agent(conn, team, "Foreman")
        factory = await factories.create_factory(conn, team, "F", None, agent)
        inline = {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": yearly}}
        for i in range(AUTOMATIONS):
            spec = AutomationCreate(name=f"a{i}", prompt="p", triggers=[inline])
            await automations.create_automation(conn, factory, spec)
    return [schedule.id for schedule in created]


async def _make_due(database: Any) -> None:
    """A new slot, due now, for every schedule (each round's slot is a different moment)."""
    async with database.transaction() as conn:
        for table in (t.scheduled_agents, t.automation_schedules):
            await conn.execute(update(table).values(next_run_at=utcnow() - timedelta(seconds=1)))


async def _all_started(database: Any) -> bool:
    async with database.read() as conn:
        later = [
            at
            for table in (t.scheduled_agents, t.automation_schedules)
            for (at,) in await conn.execute(select(table.c.next_run_at))
        ]
        return all(at > datetime.now(UTC) for at in later)


async def _runs_per_schedule(database: Any) -> Counter[str]:
    r = t.runs
    async with database.read() as conn:
        rows = await conn.execute(select(r.c.metadata).where(r.c.source == "SCHEDULED_AGENT"))
        return Counter(metadata["scheduled_agent_id"] for (metadata,) in rows)


async def _runs_per_automation(database: Any) -> Counter[str]:
    r = t.runs
    async with database.read() as conn:
        rows = await conn.execute(select(r.c.metadata).where(r.c.source == "AUTOMATION"))
        return Counter(metadata["automation_id"] for (metadata,) in rows)


def _worker(url: str, log: Path) -> subprocess.Popen[bytes]:
    env = gateway_env(
        database_url=url,
        secret_key=base64.urlsafe_b64encode(b"k" * 32).decode(),
        scheduler_poll_s="0.05",
        evaluator_priority="normal",
    )
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "gateway", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=handle,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_two_workers_start_each_due_slot_once(store_url: str, tmp_path: Path) -> None:
    uids = _run(store_url, _prepare)
    log = tmp_path / "workers.log"
    workers = [_worker(store_url, log), _worker(store_url, log)]
    try:
        for _ in range(ROUNDS):
            _run(store_url, _make_due)
            deadline = time.monotonic() + scaled(30)
            while not _run(store_url, _all_started):
                alive = [w.poll() is None for w in workers]
                assert all(alive), log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.1)
    finally:
        for worker in workers:
            _stop(worker)
    assert _run(store_url, _runs_per_schedule) == {uid: ROUNDS for uid in uids}
    assert log.read_text().count("started run") == SCHEDULES * ROUNDS
    per_automation = _run(store_url, _runs_per_automation)
    assert len(per_automation) == AUTOMATIONS and set(per_automation.values()) == {ROUNDS}
