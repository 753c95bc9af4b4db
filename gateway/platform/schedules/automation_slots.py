"""The slots of automations' inline `schedule` triggers (automation_schedules), each started
exactly once, as a scheduled agent's are (slot_runs.py): the slot is claimed by a conditional
UPDATE that moves `next_run_at` on, and the run starts in the same transaction; after downtime
one run for the oldest missed slot, then the first slot after now (docs/schedules.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format.triggers import CronError, next_slot, parse_cron
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.runs.creation.automation_runs import (
    AutomationOfRun,
    automation_columns,
    joined,
    start_automation_run,
)
from gateway.platform.tasks.models import TaskSeed
from gateway.platform.tasks.tasks import create_seed_task

s = t.automation_schedules
DUE_BATCH = 100
ENVELOPE = """

---
Scheduled run
This run was started by the automation above for its schedule {name}"{cron}" (UTC), slot \
{slot}."""


@dataclass(frozen=True, slots=True)
class DueAutomationSlot:
    automation_uid: str
    name: str
    slot: datetime


async def due_slots(
    conn: AsyncConnection, now: datetime, limit: int = DUE_BATCH
) -> list[DueAutomationSlot]:
    a = t.automations
    query = (
        select(s.c.automation_uid, s.c.name, s.c.next_run_at)
        .join(a, a.c.uid == s.c.automation_uid)
        .where(a.c.enabled.is_(True), s.c.next_run_at <= now)
        .order_by(s.c.next_run_at, s.c.automation_uid, s.c.name)
        .limit(limit)
    )
    return [DueAutomationSlot(*row) for row in (await conn.execute(query)).all()]


async def start_slot(conn: AsyncConnection, due: DueAutomationSlot) -> str | None:
    """Claims the slot and starts its run (with its task); the run id, or None when another
    scheduler claimed it first, the automation changed or was disabled since, or it has no agent
    to run as (kept in last_spawn_error)."""
    where = (s.c.automation_uid == due.automation_uid, s.c.name == due.name)
    query = (
        select(s.c.cron, s.c.next_run_at, *automation_columns())
        .select_from(joined().join(s, s.c.automation_uid == t.automations.c.uid))
        .where(*where)
    )
    row = (await conn.execute(query)).first()
    if row is None or not row.enabled or row.next_run_at != due.slot:
        return None
    now = utcnow()
    try:
        following: datetime | None = next_slot(parse_cron(row.cron), max(due.slot, now))
    except CronError:
        following = None  # stored invalid: it stops here
    claim = await conn.execute(
        update(s).where(*where, s.c.next_run_at == due.slot).values(next_run_at=following)
    )
    if claim.rowcount != 1:
        return None
    automation = AutomationOfRun.from_row(row)
    if automation.agent_uid is None:
        error = (
            "the factory has no foreman agent to run the automation as (gateway admin set-foreman)"
        )
        await conn.execute(update(s).where(*where).values(last_spawn_error=error))
        return None
    label = f'"{due.name}" ' if due.name else ""
    envelope = ENVELOPE.format(name=label, cron=row.cron, slot=due.slot.isoformat())
    metadata = {"schedule": due.name, "scheduled_for": due.slot.isoformat()}
    run = await start_automation_run(conn, automation, envelope, metadata)
    await create_seed_task(conn, automation.factory_uid, automation.name, TaskSeed.of_run(run))
    await conn.execute(
        update(s)
        .where(*where)
        .values(last_ran_at=now, last_run_id=run.run_id, last_spawn_error=None)
    )
    return str(run.run_id)
