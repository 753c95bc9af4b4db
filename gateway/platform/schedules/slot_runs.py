"""Starting the runs of scheduled agents, each due slot exactly once.

A slot is claimed by a conditional UPDATE that moves `next_run_at` from that slot to the next
one; only the transaction whose UPDATE changed the row starts the run, in the same transaction.
However many schedulers look at the same slot (worker processes, hosts), one wins: PostgreSQL
re-checks the condition after the winner commits, and SQLite writers take turns.

After downtime a schedule whose slot passed starts once, for that slot, and its next slot is
the first one after now: missed slots are not made up one by one (docs/schedules.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import ServiceError
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.record.models import AgentConfig
from gateway.platform.schedules import cron

s = t.scheduled_agents
DUE_BATCH = 100


@dataclass(frozen=True, slots=True)
class DueSlot:
    schedule_uid: str
    slot: datetime


async def due_slots(conn: AsyncConnection, now: datetime, limit: int = DUE_BATCH) -> list[DueSlot]:
    query = (
        select(s.c.uid, s.c.next_run_at)
        .where(s.c.enabled.is_(True), s.c.next_run_at <= now)
        .order_by(s.c.next_run_at, s.c.uid)
        .limit(limit)
    )
    return [DueSlot(row.uid, row.next_run_at) for row in (await conn.execute(query)).all()]


async def start_slot(conn: AsyncConnection, due: DueSlot) -> str | None:
    """Claims the slot and starts its run; the run id, or None when another scheduler claimed
    it first, the schedule changed since, or the run could not start (kept in
    last_spawn_error)."""
    row = (await conn.execute(select(s).where(s.c.uid == due.schedule_uid))).first()
    if row is None or not row.enabled or row.next_run_at != due.slot:
        return None
    now = utcnow()
    following = cron.next_slot(row.cron_schedule, max(due.slot, now))
    claim = await conn.execute(
        update(s)
        .where(s.c.uid == row.uid, s.c.enabled.is_(True), s.c.next_run_at == due.slot)
        .values(next_run_at=following)
    )
    if claim.rowcount != 1:
        return None
    try:
        async with conn.begin_nested():
            run = await insert_run(conn, await _new_run(conn, row, due.slot))
    except ServiceError as exc:
        await conn.execute(update(s).where(s.c.uid == row.uid).values(last_spawn_error=exc.detail))
        return None
    await conn.execute(
        update(s)
        .where(s.c.uid == row.uid)
        .values(last_ran_at=now, last_run_id=run.run_id, last_spawn_error=None)
    )
    return str(run.run_id)


async def _new_run(conn: AsyncConnection, row: Row[Any], slot: datetime) -> NewRun:
    """The run of one slot: created by the schedule's creator, executed by its agent if any."""
    if row.agent_uid is not None:
        agent = select(t.agents.c.uid).where(
            t.agents.c.uid == row.agent_uid, t.agents.c.team_uid == row.team_uid
        )
        if (await conn.execute(agent)).first() is None:
            raise ServiceError(f"agent_uid: agent {row.agent_uid} no longer exists in the team")
    creator = Principal(row.created_by_kind, row.created_by_uid, "", None, frozenset())
    metadata = {"scheduled_agent_id": row.uid, "scheduled_for": slot.isoformat()}
    metadata |= row.metadata or {}  # the schedule's own keys override the automatic ones
    config = row.agent_config
    prompt = row.prompt or f"Run the skill {config['skill_spec']}"
    return NewRun(
        prompt=prompt,
        title=row.name,
        team_uid=row.team_uid,
        creator=creator,
        source="SCHEDULED_AGENT",
        agent_config=None if config is None else msgspec.convert(config, AgentConfig),
        metadata=metadata,
        agent_uid=row.agent_uid,
        mode=None if row.mode == "normal" else row.mode,
    )
