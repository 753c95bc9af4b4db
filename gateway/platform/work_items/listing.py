"""A factory's work items, newest first, cursor-paged like its runs; and one of them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import WorkItemSource
from gateway.foundation.store import tables as t
from gateway.kernel.errors import NotFound
from gateway.platform.work_items.models import WorkItem

w, r = t.work_items, t.runs


async def list_work_items(
    conn: AsyncConnection,
    factory_uid: str,
    stages: Sequence[str],
    limit: int,
    after: tuple[datetime, str] | None,
) -> tuple[list[WorkItem], bool]:
    """One page (newest first) after the keyset `after`, and whether more follow."""
    query = select(w).where(w.c.factory_uid == factory_uid)
    if stages:
        query = query.where(w.c.stage.in_(list(stages)))
    if after is not None:
        moment, item_id = after
        query = query.where(
            or_(w.c.created_at < moment, and_(w.c.created_at == moment, w.c.id < item_id))
        )
    query = query.order_by(w.c.created_at.desc(), w.c.id.desc()).limit(limit + 1)
    rows = list(await conn.execute(query))
    page = rows[:limit]
    return await _with_runs(conn, page), len(rows) > limit


async def get_work_item(conn: AsyncConnection, factory_uid: str, item_id: str) -> WorkItem:
    query = select(w).where(w.c.id == item_id, w.c.factory_uid == factory_uid)
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"id: no work item '{item_id}' in this factory")
    (item,) = await _with_runs(conn, [row])
    return item


async def _with_runs(conn: AsyncConnection, rows: Sequence[Any]) -> list[WorkItem]:
    """The work items of `rows`, each with its runs' ids (one query for the page)."""
    runs: dict[str, list[str]] = {row.id: [] for row in rows}
    if runs:
        query = (
            select(r.c.work_item_id, r.c.run_id)
            .where(r.c.work_item_id.in_(list(runs)))
            .order_by(r.c.created_at, r.c.run_id)
        )
        for item_id, run_id in await conn.execute(query):
            runs[item_id].append(run_id)
    return [
        WorkItem(
            id=row.id,
            source=WorkItemSource(provider=row.provider, kind=row.kind, ref=row.ref, url=row.url),
            stage=row.stage,
            run_ids=runs[row.id],
            followup_count=row.followup_count,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        for row in rows
    ]
