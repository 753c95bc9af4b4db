"""Runs that automations start inside the platform: for an inline `schedule` slot
(platform/schedules/automation_slots.py) and for a task's stage change
(platform/tasks/stage_triggers.py). Each carries the automation's prompt with an envelope that
says what started it, its agent (else the factory's foreman) and the configuration its runs
carry (`automations.agent_config`, stored as written)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.platform.runs.models import RunRecord
from gateway.platform.runs.records import NewRun, load_run, run_values
from gateway.store import tables as t
from gateway.store.types import utcnow

SOURCE = "AUTOMATION"  # a run an automation started from within the platform


@dataclass(frozen=True, slots=True)
class AutomationOfRun:
    """What starting a run of an automation needs of it and its factory."""

    uid: str
    name: str
    prompt: str
    enabled: bool
    factory_uid: str
    team_uid: str
    agent_uid: str | None  # its own agent, else the factory's foreman
    agent_config: Any  # JSON, or None


def automation_columns() -> tuple[Any, ...]:
    """The columns `of_row` reads, from automations joined with factories."""
    a, f = t.automations, t.factories
    return (
        *(a.c.uid, a.c.name, a.c.prompt, a.c.enabled, a.c.factory_uid, f.c.team_uid),
        *(a.c.agent_uid, a.c.agent_config, f.c.foreman_agent_uid),
    )


def joined() -> Any:
    a, f = t.automations, t.factories
    return a.join(f, f.c.uid == a.c.factory_uid)


def of_row(row: Any) -> AutomationOfRun:
    return AutomationOfRun(
        row.uid,
        row.name,
        row.prompt,
        bool(row.enabled),
        row.factory_uid,
        row.team_uid,
        row.agent_uid or row.foreman_agent_uid,
        row.agent_config,
    )


async def load_automation(conn: AsyncConnection, uid: str) -> AutomationOfRun | None:
    query = select(*automation_columns()).select_from(joined()).where(t.automations.c.uid == uid)
    row = (await conn.execute(query)).first()
    return None if row is None else of_row(row)


async def start_automation_run(
    conn: AsyncConnection,
    automation: AutomationOfRun,
    envelope: str,
    metadata: dict[str, str],
    conversation_id: str | None = None,
) -> RunRecord:
    """Inserts the QUEUED run (in `conversation_id` when given: a new root run of it). The
    caller makes sure the automation has an agent (`agent_uid`)."""
    new = NewRun(
        prompt=automation.prompt + envelope,
        title=automation.name,
        team_uid=automation.team_uid,
        factory_uid=automation.factory_uid,
        source=SOURCE,
        metadata={"automation_id": automation.uid, **metadata},
        agent_uid=automation.agent_uid,
        conversation_id=conversation_id,
    )
    run_id = ids.new_uuid()
    values = run_values(new, run_id, utcnow()) | {"agent_config": automation.agent_config}
    await conn.execute(insert(t.runs).values(**values))
    return await load_run(conn, run_id)
