"""What the console's work item pages read: a factory's work items by stage (the board), and
one work item with its runs and the deliveries that continued it, each linked to its page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.agent_console.run_reads import delivery_href
from gateway.platform.runs.record.models import RunRecord
from gateway.platform.work_items.listing import get_work_item, list_work_items
from gateway.platform.work_items.models import WorkItem

# the board's columns, in the order work moves (factory_format's WORK_ITEM_STAGES)
STAGES = ("TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED")
BOARD_LIMIT = 200


@dataclass(frozen=True, slots=True)
class FollowUp:
    delivery_id: str
    delivery_href: str
    run_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class WorkItemView:
    item: WorkItem
    runs: list[RunRecord]
    follow_ups: list[FollowUp]
    first_delivery_href: str  # the delivery that made it (its first run's)


async def board(conn: AsyncConnection, factory_uid: str) -> dict[str, list[WorkItem]]:
    """The factory's newest BOARD_LIMIT work items, by stage."""
    items, _more = await list_work_items(conn, factory_uid, (), BOARD_LIMIT, None)
    columns: dict[str, list[WorkItem]] = {stage: [] for stage in STAGES}
    for item in items:
        columns.setdefault(item.stage, []).append(item)
    return columns


async def work_item_view(conn: AsyncConnection, factory_uid: str, item_id: str) -> WorkItemView:
    """One work item of the factory (404 otherwise), its runs oldest first, its follow-ups."""
    item = await get_work_item(conn, factory_uid, item_id)
    r, f = t.runs, t.work_item_follow_ups
    rows = await conn.execute(select(r).where(r.c.run_id.in_(item.run_ids)))
    by_id = {row.run_id: RunRecord.from_row(row) for row in rows}
    runs = [by_id[run_id] for run_id in item.run_ids if run_id in by_id]
    query = select(f).where(f.c.work_item_id == item_id).order_by(f.c.created_at, f.c.id)
    follow_ups = [
        FollowUp(
            row.delivery_id, await delivery_href(conn, row.delivery_id), row.run_id, row.created_at
        )
        for row in await conn.execute(query)
    ]
    first = next((run.delivery_id for run in runs if run.delivery_id), None)
    href = await delivery_href(conn, first) if first else ""
    return WorkItemView(item, runs, follow_ups, href)
