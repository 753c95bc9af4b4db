"""The inline `schedule` triggers of automations (`schedule` / `cron_fired` with a `schedule`),
kept in automation_schedules with their next slot whenever an automation's triggers are
written, so the scheduler finds the due ones by an index instead of reading every automation
(docs/schedules.md, "Automation schedules").

A schedule whose cron did not change keeps its row (and so its next slot and last run) when the
automation is written again: applying the same factory file twice moves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from factory_format.triggers import CronError, next_slot, parse_cron
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow

log = logging.getLogger("gateway.automations")
s = t.automation_schedules


def inline_schedules(triggers: Sequence[CanonicalTrigger]) -> dict[str, str]:
    """Schedule name ("" for the unnamed one) -> its cron, of the triggers' inline schedules."""
    return {
        trigger.schedule.name or "": trigger.schedule.cron
        for trigger in triggers
        if trigger.provider == "schedule" and trigger.schedule is not None
    }


async def write_schedules(
    conn: AsyncConnection, automation_uid: str, triggers: Sequence[CanonicalTrigger]
) -> None:
    wanted = inline_schedules(triggers)
    query = select(s.c.name, s.c.cron).where(s.c.automation_uid == automation_uid)
    stored = {row.name: row.cron for row in await conn.execute(query)}
    gone = [name for name, cron in stored.items() if wanted.get(name) != cron]
    if gone:
        await conn.execute(
            delete(s).where(s.c.automation_uid == automation_uid, s.c.name.in_(gone))
        )
    now = utcnow()
    rows = [
        {"automation_uid": automation_uid, "name": name, "cron": cron, "next_run_at": slot}
        for name, cron in wanted.items()
        if stored.get(name) != cron and (slot := _first_slot(automation_uid, cron, now))
    ]
    if rows:
        await conn.execute(insert(s), rows)


async def skip_missed_slots(conn: AsyncConnection, automation_uid: str) -> None:
    """Each schedule of the automation waits for its first slot after now (an automation
    enabled again does not make up the slots of its pause, as a resumed scheduled agent)."""
    query = select(s.c.name, s.c.cron).where(s.c.automation_uid == automation_uid)
    now = utcnow()
    for row in (await conn.execute(query)).all():
        following = _first_slot(automation_uid, row.cron, now)
        await conn.execute(
            update(s)
            .where(s.c.automation_uid == automation_uid, s.c.name == row.name)
            .values(next_run_at=following)
        )


async def remove_schedules(conn: AsyncConnection, automation_uid: str) -> None:
    await conn.execute(delete(s).where(s.c.automation_uid == automation_uid))


def _first_slot(automation_uid: str, cron: str, now: datetime) -> datetime | None:
    try:
        return next_slot(parse_cron(cron), now)
    except CronError as exc:  # checked when written; a stored fault must not stop the others
        log.error("automation %s: schedule %r not kept: %s", automation_uid, cron, exc)
        return None
