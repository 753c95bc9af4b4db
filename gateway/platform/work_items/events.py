"""The events a work item's life writes (docs/events.md): `work_item.created` when a batch
makes it, `work_item.stage_changed` when its runs move it; in the transaction of the change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import WorkItemEventData, WorkItemSource
from gateway.foundation.events.log import NewEvent, record_events
from gateway.foundation.store import tables as t
from gateway.webhook_gateway.evaluator.run_platform import NewWorkItem

w, r = t.work_items, t.runs


async def record_created(conn: AsyncConnection, items: Sequence[NewWorkItem], stage: str) -> None:
    """`work_item.created` of each of `items` (new, made by this transaction: nothing read)."""
    await record_events(
        conn,
        [
            NewEvent(
                "work_item.created",
                item.team_uid,
                WorkItemEventData(
                    work_item_id=item.id,
                    factory_uid=item.key.factory_uid,
                    source=WorkItemSource(
                        provider=item.key.provider, kind=item.kind, ref=item.key.ref, url=item.url
                    ),
                    stage=stage,
                    run_ids=[item.run_id],
                    followup_count=0,
                    created_at=item.created_at,
                    updated_at=item.created_at,
                ),
                factory_uid=item.key.factory_uid,
            )
            for item in items
        ],
    )


async def record_stage_changes(conn: AsyncConnection, previous: Mapping[str, str]) -> None:
    """`work_item.stage_changed` of the work items whose ids `previous` maps to the stage they
    left: each as it is now (two queries for all)."""
    if not previous:
        return
    ids = sorted(previous)
    rows = list(await conn.execute(select(w).where(w.c.id.in_(ids))))
    runs: dict[str, list[str]] = {item_id: [] for item_id in ids}
    query = (
        select(r.c.work_item_id, r.c.run_id)
        .where(r.c.work_item_id.in_(ids))
        .order_by(r.c.created_at, r.c.run_id)
    )
    for item_id, run_id in await conn.execute(query):
        runs[item_id].append(run_id)
    await record_events(
        conn,
        [
            NewEvent(
                "work_item.stage_changed",
                row.team_uid,
                WorkItemEventData(
                    work_item_id=row.id,
                    factory_uid=row.factory_uid,
                    source=WorkItemSource(
                        provider=row.provider, kind=row.kind, ref=row.ref, url=row.url
                    ),
                    stage=row.stage,
                    run_ids=runs[row.id],
                    followup_count=row.followup_count,
                    created_at=row.created_at,
                    updated_at=row.updated_at,
                    previous_stage=previous[row.id],
                ),
                factory_uid=row.factory_uid,
            )
            for row in rows
        ],
    )
