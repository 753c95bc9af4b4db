"""`factory` / `work_item_stage_changed` triggers: a task's stage change starts, in the same
transaction, one run of each enabled automation of the task's factory with such a trigger whose
`stages` filter holds the new stage (several matching triggers of one automation: one run).

The run is a new root run in the task's conversation, so it belongs to the work item that moved
(no second task). A change the run itself makes to the stage fires the triggers again: an
automation that moves the task to a stage it listens to would start itself again.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from gateway.foundation.store import tables as t
from gateway.platform.inbox.notifications import on_dispatch_failed
from gateway.platform.runs.creation.automation_runs import (
    AutomationOfRun,
    automation_columns,
    joined,
    start_automation_run,
)

log = logging.getLogger("gateway.automations")

PROVIDER, EVENT = "factory", "work_item_stage_changed"
ENVELOPE = """

---
Work item stage changed
This run was started by the automation above because the task "{title}" (uid {uid}) of this \
factory moved from {before} to {after}."""


def fires(triggers: list[CanonicalTrigger], stage: str) -> bool:
    """Whether a stage-change trigger among `triggers` matches a move to `stage`."""
    for trigger in triggers:
        if (trigger.provider, trigger.event) != (PROVIDER, EVENT):
            continue
        matcher = trigger.filter.get("stages")
        if matcher is None:
            return True
        if matcher.in_ and stage not in matcher.in_:
            continue
        if stage in matcher.not_in:
            continue
        return True
    return False


async def on_stage_change(conn: AsyncConnection, task: Any, stage: str) -> list[str]:
    """Starts the runs of the automations `task` (its row before the change) moving to `stage`
    fires; their run ids."""
    envelope = ENVELOPE.format(title=task.title, uid=task.uid, before=task.stage, after=stage)
    metadata = {"task_uid": task.uid, "from_stage": task.stage, "to_stage": stage}
    return await start_stage_runs(
        conn,
        task.factory_uid,
        stage,
        f"task {task.uid}",
        envelope,
        metadata,
        conversation_id=task.conversation_id,
    )


async def start_stage_runs(
    conn: AsyncConnection,
    factory_uid: str,
    stage: str,
    subject: str,
    envelope: str,
    metadata: dict[str, str],
    conversation_id: str | None = None,
) -> list[str]:
    """Starts a run of each enabled automation of the factory whose stage-change triggers
    match a move of `subject` (a task, a work item) to `stage`; their run ids."""
    a = t.automations
    query = (
        select(a.c.triggers, *automation_columns())
        .select_from(joined())
        .where(a.c.factory_uid == factory_uid, a.c.enabled.is_(True))
        .order_by(a.c.created_at, a.c.uid)
    )
    started: list[str] = []
    for row in (await conn.execute(query)).all():
        if not _listens(row) or not fires(_triggers(row), stage):
            continue
        automation = AutomationOfRun.from_row(row)
        if automation.agent_uid is None:
            detail = (
                f"{subject} moved to {stage} and matched automation {automation.uid}, but "
                "the factory has no foreman agent to run it; set one (gateway admin set-foreman)"
            )
            await on_dispatch_failed(conn, factory_uid, detail)
            continue
        run = await start_automation_run(
            conn, automation, envelope, metadata, conversation_id=conversation_id
        )
        started.append(run.run_id)
    return started


def _listens(row: Any) -> bool:
    """A cheap test before parsing the triggers: most automations have no such trigger."""
    return EVENT in str(row.triggers)


def _triggers(row: Any) -> list[CanonicalTrigger]:
    try:
        return msgspec.convert(row.triggers, list[CanonicalTrigger])
    except msgspec.ValidationError as exc:
        log.error("automation %s: unreadable triggers: %s", row.uid, exc)
        return []
