"""Runs that automations start inside the platform: for an inline `schedule` slot
(platform/schedules/automation_slots.py) and for a task's stage change
(platform/tasks/stage_triggers.py). Each carries the automation's prompt with an envelope that
says what started it, its agent (else the factory's foreman) and the configuration its runs
carry (`automations.agent_config`, stored as written)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.rows import from_row
from gateway.kernel.types import JsonObject
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.record.models import RunRecord

SOURCE = "AUTOMATION"  # a run an automation started from within the platform


class AutomationOfRun(msgspec.Struct, frozen=True, kw_only=True):
    """What starting a run of an automation needs of it and its factory."""

    uid: str
    name: str
    prompt: str
    enabled: bool
    factory_uid: str
    team_uid: str
    agent_uid: str | None  # its own agent, else the factory's foreman
    agent_config: JsonObject | None

    @classmethod
    def from_row(cls, row: Any) -> AutomationOfRun:
        """A row of `automation_columns()` (with the columns a query adds before them)."""
        return from_row(cls, row)


def automation_columns() -> tuple[Any, ...]:
    """The columns `AutomationOfRun.from_row` reads, from automations joined with factories."""
    a, f = t.automations, t.factories
    return (
        *(a.c.uid, a.c.name, a.c.prompt, a.c.enabled, a.c.factory_uid, f.c.team_uid),
        func.coalesce(a.c.agent_uid, f.c.foreman_agent_uid).label("agent_uid"),
        a.c.agent_config,
    )


def joined() -> Any:
    a, f = t.automations, t.factories
    return a.join(f, f.c.uid == a.c.factory_uid)


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
        stored_config=automation.agent_config,
    )
    return await insert_run(conn, new)
