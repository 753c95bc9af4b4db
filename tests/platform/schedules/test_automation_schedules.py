"""Automations' inline `schedule` triggers, on SQLite and PostgreSQL: their slots kept with the
automation, one run per slot (racing schedulers included), one run after downtime, nothing
made up for a disabled automation, and the run's prompt, agent, configuration and task."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.schedules import automation_slots
from gateway.platform.schedules.scheduler import start_due
from tests.connections.provider_world import automation, trigger
from tests.support import World

s = t.automation_schedules


def scheduled(world: World, *crons: tuple[str, str | None], **extra: Any) -> str:
    triggers = [
        {"provider": "schedule", "event": "cron_fired", "schedule": {"cron": cron}}
        | ({"schedule": {"cron": cron, "name": name}} if name else {})
        for cron, name in crons
    ]
    return automation(world, world.factory_uid, "nightly", *triggers, **extra)


def rows(world: World, uid: str) -> dict[str, Any]:
    async def read(services: Services) -> dict[str, Any]:
        async with services.database.read() as conn:
            found = await conn.execute(select(s).where(s.c.automation_uid == uid))
            return {row.name: row for row in found}

    result: dict[str, Any] = world.client.run(read)
    return result


def due_now(world: World, uid: str, slot: datetime) -> None:
    async def run(services: Services) -> None:
        async with services.database.transaction() as conn:
            await conn.execute(update(s).where(s.c.automation_uid == uid).values(next_run_at=slot))

    world.client.run(run)


def runs_of(world: World, uid: str) -> list[Any]:
    async def read(services: Services) -> list[Any]:
        r = t.runs
        query = select(r).where(r.c.source == "AUTOMATION").order_by(r.c.created_at)
        async with services.database.read() as conn:
            found = (await conn.execute(query)).all()
        return [row for row in found if (row.metadata or {}).get("automation_id") == uid]

    result: list[Any] = world.client.run(read)
    return result


def test_a_schedule_is_kept_with_its_automation(world: World) -> None:
    uid = scheduled(world, ("0 9 * * *", None), ("@every 90m", "often"))
    found = rows(world, uid)
    assert set(found) == {"", "often"}
    assert found[""].cron == "0 9 * * *"
    after = utcnow()
    first = found[""].next_run_at
    assert first > after - timedelta(minutes=1) and (first.hour, first.minute) == (9, 0)
    assert found["often"].next_run_at.timestamp() % 5400 == 0  # @every: multiples of 90 minutes
    # written again unchanged: the slots stay; a changed cron starts over; a removed one goes
    daily = trigger("schedule", "cron_fired") | {"schedule": {"cron": "0 9 * * *"}}
    often = trigger("schedule", "cron_fired") | {"schedule": {"cron": "@every 2h", "name": "often"}}
    same = {"triggers": [daily, often]}
    assert world.api("PATCH", f"/factory/{world.factory_uid}/automations/{uid}", json=same)
    again = rows(world, uid)
    assert again[""].next_run_at == first and again["often"].cron == "@every 2h"
    only = {"triggers": [trigger("github", "push")]}
    assert world.api("PATCH", f"/factory/{world.factory_uid}/automations/{uid}", json=only)
    assert rows(world, uid) == {}
    uid = scheduled(world, ("0 9 * * *", None))
    assert world.api("DELETE", f"/factory/{world.factory_uid}/automations/{uid}").status_code == 204
    assert rows(world, uid) == {}


def test_a_due_slot_starts_one_run_with_its_task(world: World) -> None:
    uid = scheduled(world, ("0 9 * * *", None), prompt="Write the daily report.")
    slot = (utcnow() - timedelta(minutes=1)).replace(second=0, microsecond=0)
    due_now(world, uid, slot)

    async def twice(services: Services) -> int:
        return await start_due(services.database) + await start_due(services.database)

    world.client.run(twice)
    (run,) = runs_of(world, uid)
    assert run.prompt.startswith("Write the daily report.\n\n---\nScheduled run\n")
    assert '"0 9 * * *" (UTC)' in run.prompt and slot.isoformat() in run.prompt
    assert run.title == "nightly" and run.agent_uid == world.agent_uid
    assert run.factory_uid == world.factory_uid and run.team_uid == world.team_uid
    assert run.metadata == {
        "automation_id": uid,
        "schedule": "",
        "scheduled_for": slot.isoformat(),
    }
    found = rows(world, uid)[""]
    assert found.next_run_at > utcnow() and found.last_run_id == run.run_id
    tasks = world.api("GET", f"/factory/{world.factory_uid}/tasks").json()["tasks"]
    assert [task["conversation_id"] for task in tasks] == [run.conversation_id]


def test_after_downtime_one_run_and_racing_schedulers_start_a_slot_once(world: World) -> None:
    uid = scheduled(world, ("* * * * *", None))
    slot = (utcnow() - timedelta(days=1)).replace(second=0, microsecond=0)  # 1,440 slots missed
    due_now(world, uid, slot)
    due = automation_slots.DueAutomationSlot(uid, "", slot)

    async def race(services: Services) -> list[str | None]:
        async def contender() -> str | None:
            async with services.database.transaction() as conn:
                return await automation_slots.start_slot(conn, due)

        return list(await asyncio.gather(*(contender() for _ in range(4))))

    outcomes = world.client.run(race)
    assert len(runs_of(world, uid)) == 1
    assert sum(outcome is not None for outcome in outcomes) <= 1  # or the background scheduler
    assert rows(world, uid)[""].next_run_at > utcnow() - timedelta(seconds=1)


def test_a_disabled_automation_makes_up_nothing(world: World) -> None:
    uid = scheduled(world, ("0 9 * * *", None))
    one = f"/factory/{world.factory_uid}/automations/{uid}"
    assert world.api("PATCH", one, json={"enabled": False}).status_code == 200
    due_now(world, uid, (utcnow() - timedelta(hours=1)).replace(second=0, microsecond=0))

    async def scheduler_pass(services: Services) -> int:
        return await start_due(services.database)

    world.client.run(scheduler_pass)
    assert runs_of(world, uid) == []
    assert world.api("PATCH", one, json={"enabled": True}).status_code == 200
    assert rows(world, uid)[""].next_run_at > utcnow()  # the slot of the pause is skipped
    world.client.run(scheduler_pass)
    assert runs_of(world, uid) == []


def test_no_foreman_uses_the_slot_up_and_says_why(world: World) -> None:
    uid = scheduled(world, ("0 9 * * *", None))

    async def headless(services: Services) -> None:
        f = t.factories
        async with services.database.transaction() as conn:
            await conn.execute(
                update(f).where(f.c.uid == world.factory_uid).values(foreman_agent_uid=None)
            )

    world.client.run(headless)
    due_now(world, uid, (utcnow() - timedelta(minutes=1)).replace(second=0, microsecond=0))

    async def scheduler_pass(services: Services) -> int:
        return await start_due(services.database)

    world.client.run(scheduler_pass)
    assert runs_of(world, uid) == []
    found = rows(world, uid)[""]
    assert "foreman" in found.last_spawn_error and found.next_run_at > utcnow()
