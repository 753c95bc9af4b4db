"""Claiming a due slot: of several schedulers racing for the same slot, exactly one starts its
run (real SQLite and PostgreSQL, concurrent transactions)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import select, update

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.schedules import schedules
from gateway.platform.schedules import slot_runs as schedule_runs
from gateway.platform.schedules.models import ScheduleCreate
from tests.support import World


def test_racing_schedulers_start_a_slot_once(world: World) -> None:
    owner = Principal("user", world.user_uid, "u", None, frozenset({world.team_uid}))

    async def race(services: Services) -> tuple[list[str | None], int]:
        database = services.database
        body = ScheduleCreate(name="n", cron_schedule="0 0 1 1 *", prompt="p")
        slot = (utcnow() - timedelta(minutes=1)).replace(microsecond=0)
        async with database.transaction() as conn:
            schedule = await schedules.create_schedule(conn, owner, body, ())
            s = t.scheduled_agents
            await conn.execute(update(s).where(s.c.uid == schedule.id).values(next_run_at=slot))
        due = schedule_runs.DueSlot(schedule.id, slot)

        async def contender() -> str | None:
            async with database.transaction() as conn:
                return await schedule_runs.start_slot(conn, due)

        outcomes = await asyncio.gather(*(contender() for _ in range(4)))
        r = t.runs
        async with database.read() as conn:  # the session's PostgreSQL store holds other runs
            query = select(r.c.metadata).where(r.c.source == "SCHEDULED_AGENT")
            metadata = (await conn.execute(query)).scalars()
            count = sum((m or {}).get("scheduled_agent_id") == schedule.id for m in metadata)
        return list(outcomes), int(count)

    outcomes, runs = world.client.run(race)
    assert sum(outcome is not None for outcome in outcomes) == 1, outcomes
    assert runs == 1


def test_a_scheduled_run_carries_its_schedule_s_mode_to_the_runner(world: World) -> None:
    owner = Principal("user", world.user_uid, "u", None, frozenset({world.team_uid}))

    async def start(services: Services) -> str:
        body = ScheduleCreate(name="m", cron_schedule="0 0 1 1 *", prompt="p", mode="orchestrate")
        slot = (utcnow() - timedelta(minutes=1)).replace(microsecond=0)
        async with services.database.transaction() as conn:
            schedule = await schedules.create_schedule(conn, owner, body, ())
            s = t.scheduled_agents
            await conn.execute(update(s).where(s.c.uid == schedule.id).values(next_run_at=slot))
        async with services.database.transaction() as conn:
            run_id = await schedule_runs.start_slot(conn, schedule_runs.DueSlot(schedule.id, slot))
        assert run_id is not None
        return run_id

    run_id = world.client.run(start)
    register = world.api("POST", "/runner/register", headers=world.agent, json={"name": "r"})
    runner_uid = register.json()["runner_uid"]
    claimed = world.api(
        "POST",
        "/runner/claim",
        headers=world.agent,
        json={"runner_uid": runner_uid, "max_runs": 50, "wait_s": 0},
    ).json()["runs"]
    (mine,) = [run for run in claimed if run["run_id"] == run_id]
    assert mine["mode"] == "orchestrate" and mine["messages"] == []
