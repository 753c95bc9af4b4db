"""A work item's stage follows its runs, and a change fires the factory's
`factory` / `work_item_stage_changed` triggers (docs/providers.md#work-items).

The stages are the task stages the triggers' `stages` filter takes (factory_format's
WORK_ITEM_STAGES): a work item is TRIAGE when its first event makes it; then each state its
runs enter moves it (the last change wins when several runs of it move):

| run state | stage |
|---|---|
| QUEUED again (a follow-up resumed it, or its runner gave it back) | TODO |
| CLAIMED, PENDING, INPROGRESS | IN_PROGRESS |
| BLOCKED (waits for input), FAILED, ERROR (a person's turn) | IN_REVIEW |
| SUCCEEDED | DONE |
| CANCELLED | CANCELLED |

The runs a stage change starts do not belong to the work item (their metadata names it):
their own states must not move it again, or a trigger on DONE would start itself forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.record.timeline import Entry, on_state_changes
from gateway.platform.tasks.stage_triggers import start_stage_runs
from gateway.platform.work_items.events import record_stage_changes

STAGE_OF_STATE = {
    "QUEUED": "TODO",
    "CLAIMED": "IN_PROGRESS",
    "PENDING": "IN_PROGRESS",
    "INPROGRESS": "IN_PROGRESS",
    "BLOCKED": "IN_REVIEW",
    "FAILED": "IN_REVIEW",
    "ERROR": "IN_REVIEW",
    "SUCCEEDED": "DONE",
    "CANCELLED": "CANCELLED",
}
ENVELOPE = """

---
Work item stage changed
This run was started by the automation above because the work item {ref} ({provider}, id \
{id}) of this factory moved from {before} to {after}."""


class WorkItemRow(NamedTuple):
    id: str
    stage: str  # before the change
    factory_uid: str
    provider: str
    ref: str


@on_state_changes
async def on_run_states(conn: AsyncConnection, entries: list[Entry]) -> None:
    """Moves the work items of the runs in `entries` (one query finds them; runs of none cost
    nothing more) and fires the triggers of each change."""
    run_ids = sorted({entry.run_id for entry in entries if entry.state in STAGE_OF_STATE})
    if not run_ids:
        return
    r, w = t.runs, t.work_items
    query = (
        select(r.c.run_id, w.c.id, w.c.stage, w.c.factory_uid, w.c.provider, w.c.ref)
        .select_from(r.join(w, w.c.id == r.c.work_item_id))
        .where(r.c.run_id.in_(run_ids))
    )
    items = {run_id: WorkItemRow(*rest) for run_id, *rest in await conn.execute(query)}
    if not items:
        return
    moves: dict[str, tuple[WorkItemRow, str, datetime]] = {}  # work item id -> (item, stage, at)
    for entry in entries:
        item = items.get(entry.run_id)
        if item is not None and entry.state in STAGE_OF_STATE:
            moves[item.id] = (item, STAGE_OF_STATE[entry.state], entry.at)
    await move_work_items(conn, list(moves.values()))


async def move_work_items(
    conn: AsyncConnection, moves: Sequence[tuple[WorkItemRow, str, datetime]]
) -> None:
    """Each (work item, stage, at): moved when it is elsewhere, each change firing its
    triggers and recorded as an event (also how a merged pull request ends one, ends.py)."""
    w = t.work_items
    previous: dict[str, str] = {}  # work item id -> the stage it left
    for item, stage, at in moves:
        moved = await conn.execute(
            update(w)
            .where(w.c.id == item.id, w.c.stage != stage)
            .values(stage=stage, updated_at=at)
        )
        if moved.rowcount == 1:
            previous[item.id] = item.stage
            await _fire(conn, item, stage)
    await record_stage_changes(conn, previous)


async def _fire(conn: AsyncConnection, item: WorkItemRow, stage: str) -> None:
    before = item.stage
    envelope = ENVELOPE.format(
        ref=item.ref, provider=item.provider, id=item.id, before=before, after=stage
    )
    metadata = {"work_item_id": item.id, "from_stage": before, "to_stage": stage}
    subject = f"work item {item.id}"
    await start_stage_runs(conn, item.factory_uid, stage, subject, envelope, metadata)
