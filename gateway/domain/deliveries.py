"""The webhook delivery log in SQL: batch writes from the consumer, retention, and reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import orjson
from sqlalchemy import delete, desc, insert, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.base import DEDUP_WINDOW_S, DeliveryRecord, Label
from gateway.domain.automation_runs import AcceptedDelivery, RunRef, RunStarter
from gateway.errors import NotFound
from gateway.services import Services
from gateway.store import tables as t
from gateway.store.types import utcnow

KEEP_NEWEST = 50  # per webhook, whatever their age
RETENTION = timedelta(seconds=DEDUP_WINDOW_S)

d = t.deliveries


class Starter(Protocol):
    async def start_runs(
        self, conn: AsyncConnection, delivery: AcceptedDelivery
    ) -> list[RunRef]: ...


@runtime_checkable
class BatchStarter(Starter, Protocol):
    """A starter that also takes a whole batch at once (RunStarter does)."""

    async def start_batch(
        self, conn: AsyncConnection, batch: Sequence[AcceptedDelivery]
    ) -> dict[str, list[RunRef]]: ...


async def store_records(
    conn: AsyncConnection,
    services: Services,
    records: Sequence[DeliveryRecord],
    starter: Starter | None = None,
) -> list[DeliveryRecord]:
    """Insert the records not yet logged and start runs for the accepted ones, in the caller's
    transaction. Idempotent: a redelivered record is skipped. Returns the records inserted."""
    ids = list({r.delivery_id for r in records})
    present = set(
        (await conn.execute(select(d.c.delivery_id).where(d.c.delivery_id.in_(ids)))).scalars()
    )
    fresh: dict[str, DeliveryRecord] = {}
    for record in records:
        if record.delivery_id not in present:
            fresh.setdefault(record.delivery_id, record)
    if not fresh:
        return []
    await conn.execute(insert(d), [_row(r) for r in fresh.values()])
    starter = starter or RunStarter(services)
    accepted = [
        AcceptedDelivery(r.delivery_id, r.webhook_uid, r.received_at, r.payload)
        for r in fresh.values()
        if r.label is Label.ACCEPTED and r.payload is not None
    ]
    if accepted:
        if isinstance(starter, BatchStarter):  # the whole batch in a few statements
            await starter.start_batch(conn, accepted)
        else:
            for delivery in accepted:
                await starter.start_runs(conn, delivery)
    return list(fresh.values())


_FIELDS = tuple(f.name for f in fields(DeliveryRecord))


def _row(record: DeliveryRecord) -> dict[str, Any]:
    """`record_row` without `asdict`'s deep copy (the payload bytes are immutable)."""
    row = {name: getattr(record, name) for name in _FIELDS}
    row["label"] = record.label.value
    return row


async def prune(conn: AsyncConnection, now: datetime | None = None) -> int:
    """Delete records older than 7 days, except the newest 50 of each webhook."""
    cutoff = (now or utcnow()) - RETENTION
    stale_hooks = select(d.c.webhook_uid).where(d.c.received_at < cutoff).distinct()
    ranked = (
        select(
            d.c.delivery_id,
            _row_number().label("rn"),
        )
        .where(d.c.webhook_uid.in_(stale_hooks))
        .subquery()
    )
    keep = select(ranked.c.delivery_id).where(ranked.c.rn <= KEEP_NEWEST)
    result = await conn.execute(
        delete(d).where(d.c.received_at < cutoff, d.c.delivery_id.not_in(keep))
    )
    return int(result.rowcount or 0)


def _row_number() -> Any:
    from sqlalchemy import func

    return func.row_number().over(
        partition_by=d.c.webhook_uid, order_by=(desc(d.c.received_at), desc(d.c.delivery_id))
    )


async def require_webhook(conn: AsyncConnection, factory_uid: str, webhook_uid: str) -> None:
    row = (
        await conn.execute(
            select(t.webhooks.c.uid).where(
                t.webhooks.c.uid == webhook_uid,
                t.webhooks.c.factory_uid == factory_uid,
                t.webhooks.c.deleted_at.is_(None),
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"webhook: {webhook_uid} not found in this factory")


async def list_deliveries(
    conn: AsyncConnection, webhook_uid: str, limit: int, after: tuple[datetime, str] | None
) -> tuple[list[dict[str, Any]], bool]:
    """Newest first; `after` is the (received_at, delivery_id) of the last item of a page."""
    query = select(d.c.delivery_id, d.c.received_at, d.c.size, d.c.label).where(
        d.c.webhook_uid == webhook_uid
    )
    if after is not None:
        query = query.where(tuple_(d.c.received_at, d.c.delivery_id) < tuple_(after[0], after[1]))
    query = query.order_by(desc(d.c.received_at), desc(d.c.delivery_id)).limit(limit + 1)
    rows = (await conn.execute(query)).all()[: limit + 1]
    items = [_item(row) for row in rows[:limit]]
    await _attach_runs(conn, items)
    return items, len(rows) > limit


async def get_delivery(conn: AsyncConnection, webhook_uid: str, delivery_id: str) -> dict[str, Any]:
    row = (
        await conn.execute(
            select(d).where(d.c.webhook_uid == webhook_uid, d.c.delivery_id == delivery_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"delivery: {delivery_id} not found for this webhook")
    item = _item(row)
    await _attach_runs(conn, [item])
    if row.label == Label.ACCEPTED.value and row.payload is not None:
        item["payload"] = orjson.loads(row.payload)
    return item


def _item(row: Any) -> dict[str, Any]:
    return {
        "delivery_id": row.delivery_id,
        "received_at": row.received_at,
        "size": row.size,
        "label": row.label,
        "runs": [],
    }


async def _attach_runs(conn: AsyncConnection, items: list[dict[str, Any]]) -> None:
    by_id = {item["delivery_id"]: item for item in items}
    if not by_id:
        return
    ar = t.automation_runs
    query = (
        select(ar.c.delivery_id, ar.c.automation_uid, ar.c.run_id)
        .where(ar.c.delivery_id.in_(list(by_id)))
        .order_by(ar.c.created_at, ar.c.automation_uid)
    )
    for row in await conn.execute(query):
        by_id[row.delivery_id]["runs"].append(
            {"automation_uid": row.automation_uid, "run_id": row.run_id}
        )
