"""Reading replays: the replays of a source's deliveries (a custom webhook's or a provider
connection's), newest first, with where each one is
now (on its way to the log, waiting for the evaluator, or evaluated with its outcome and runs),
and the replay links of delivery-log items."""

from __future__ import annotations

from typing import Any

from sqlalchemy import desc, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.webhook_gateway.deliveries import trace as delivery_trace
from gateway.webhook_gateway.deliveries.models import Delivery, ReplayItem


async def list_replays(conn: AsyncConnection, source_uid: str, limit: int) -> list[ReplayItem]:
    """The caller has checked that the source is there and may be read."""
    r, d, runs = t.delivery_replays, t.deliveries, t.runs
    started = (
        select(func.count())
        .select_from(runs)
        .where(runs.c.delivery_id == r.c.delivery_id)
        .scalar_subquery()
    )
    query = (
        select(
            *(r.c.delivery_id, r.c.replay_of, r.c.created_at),
            *(d.c.label, d.c.evaluation, d.c.trace, started.label("runs")),
        )
        .select_from(r.outerjoin(d, d.c.delivery_id == r.c.delivery_id))
        .where(r.c.webhook_uid == source_uid)
        .order_by(desc(r.c.created_at), desc(r.c.delivery_id))
        .limit(limit)
    )
    return [_item(row) for row in await conn.execute(query)]


def _item(row: Any) -> ReplayItem:
    return ReplayItem(
        delivery_id=row.delivery_id,
        replay_of=row.replay_of,
        created_at=row.created_at,
        label=row.label,
        evaluation=row.evaluation,
        outcome=delivery_trace.outcome_of(row.trace),
        runs=int(row.runs or 0),
    )


async def attach_replays(
    conn: AsyncConnection, items: list[Delivery], with_replays: bool = False
) -> None:
    """`replay_of` of each item; with `with_replays`, also `replays`: the deliveries made by
    replaying it, oldest first."""
    if not items:
        return
    r = t.delivery_replays
    by_id = {item.delivery_id: item for item in items}
    query = select(r.c.delivery_id, r.c.replay_of).where(r.c.delivery_id.in_(list(by_id)))
    for row in await conn.execute(query):
        by_id[row.delivery_id].replay_of = row.replay_of
    if not with_replays:
        return
    replays: dict[str, list[str]] = {uid: [] for uid in by_id}
    query = (
        select(r.c.delivery_id, r.c.replay_of)
        .where(r.c.replay_of.in_(list(by_id)))
        .order_by(r.c.created_at, r.c.delivery_id)
    )
    for row in await conn.execute(query):
        replays[row.replay_of].append(row.delivery_id)
    for item in items:
        item.replays = replays[item.delivery_id]
