"""The webhook delivery log in SQL: batch writes and claims for the evaluator, retention, reads.

Two ways in: with Redis, the evaluator logs each stream entry once it is evaluated (`log_new`);
on the embedded backend, ingress writes accepted deliveries as "pending" before its 202 and the
evaluator claims them (`claim_pending`). Either way the batch transaction that claims a delivery
is the one that starts its runs, so a delivery is evaluated exactly once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import and_, delete, desc, exists, func, select, tuple_, update
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import DEDUP_WINDOW_S, DeliveryRecord, Label
from gateway.foundation.backends.delivery_rows import (
    DELIVERIES,
    EVALUATED,
    PENDING,
    delivery_row,
    headers_of,
)
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Prepared, Row, from_sqlite_time
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import NotFound
from gateway.webhook_gateway.deliveries import trace as delivery_trace
from gateway.webhook_gateway.deliveries.models import Delivery, DeliveryFollowUp, DeliveryRun
from gateway.webhook_gateway.deliveries.replay_list import attach_replays
from gateway.webhook_gateway.webhooks.management import get_webhook_row

_EVALUATED = (EVALUATED, delivery_trace.FAILED)
# the evaluator's inserts: the ingress backend's columns and the outcome trace
LOGGED = BulkInsert(t.deliveries, (*DELIVERIES.columns, "trace"))
KEEP_NEWEST = 50  # per webhook, whatever their age
RETENTION = timedelta(seconds=DEDUP_WINDOW_S)
d = t.deliveries
Position = tuple[datetime, str]  # (received_at, delivery_id): the log's order


def prepare_log(
    dialect: Dialect,
    records: Sequence[DeliveryRecord],
    traces: delivery_trace.TraceWrites | None = None,
) -> Prepared:
    """The log rows of `records`, accepted ones as evaluated (with their outcome traces, taken
    from `traces`), encoded for `log_new`."""
    # each row built as the driver takes it, in LOGGED's column order (`logged_row` says the
    # same as a mapping; tests hold them together): a dict a row through the generic encoders
    # was a twentieth of the evaluator's time
    time = LOGGED.encoder(dialect, "received_at")
    now = time(utcnow())
    values = []
    for r in records:
        trace, evaluation, evaluated_at = None, None, None
        accepted = r.label is Label.ACCEPTED
        if accepted:
            evaluation, evaluated_at = EVALUATED, now
            taken = traces.take(r.delivery_id) if traces is not None else None
            if taken is not None:
                trace, evaluation = taken
        values.append(
            (
                r.delivery_id, r.webhook_uid, time(r.received_at), r.size, r.label.value,
                r.identity, r.duplicate_of, r.payload if accepted else None, evaluation,
                evaluated_at, None if r.reason is None else r.reason.value,
                r.headers if accepted else None, trace,
            )
        )  # fmt: skip
    return Prepared("delivery_id", [r.delivery_id for r in records], values)


def logged_row(record: DeliveryRecord, now: datetime, trace: tuple[bytes, str] | None) -> Row:
    """The log row `prepare_log` makes of `record`, as a mapping of every column."""
    row = delivery_row(record, EVALUATED, now)
    if trace is not None and row["evaluation"]:
        row["trace"], row["evaluation"] = trace
    return row


async def log_new(conn: AsyncConnection, prepared: Prepared) -> set[str]:
    """Logs the prepared records not logged yet (the caller starts the runs of the accepted
    ones in this transaction); returns the delivery ids this call logged."""
    return await LOGGED.insert_new(conn, prepared)


async def claim_pending(conn: AsyncConnection, delivery_ids: Iterable[str]) -> set[str]:
    """Marks these pending deliveries evaluated; returns the ones this call claimed (the others
    were claimed before)."""
    wanted = sorted(set(delivery_ids))
    if not wanted:
        return set()
    statement = (
        update(d)
        .where(d.c.delivery_id.in_(wanted), d.c.evaluation == PENDING)
        .values(evaluation=EVALUATED, evaluated_at=utcnow())
        .returning(d.c.delivery_id)
    )
    return set((await conn.execute(statement)).scalars())


async def read_pending(
    conn: AsyncConnection, limit: int, after: Position | None = None
) -> list[DeliveryRecord]:
    """The oldest deliveries waiting for the evaluator (after `after`, if given). Read through
    the driver: SQLAlchemy's result processing cost more than the read itself."""
    sql, params = _pending_query(conn.dialect, limit, after)
    rows: list[Any] = list(await conn.exec_driver_sql(sql, params))
    time = _driver_time(conn.dialect)
    return [
        DeliveryRecord(r[0], r[1], time(r[2]), r[3], _LABELS[r[4]], r[5], r[6], r[7], headers=r[8])
        for r in rows
    ]


_LABELS = {label.value: label for label in Label}
_PENDING_COLUMNS = (
    *("delivery_id", "webhook_uid", "received_at", "size", "label", "identity"),
    *("duplicate_of", "payload", "headers"),  # headers: a provider delivery's event names
)


def _pending_query(
    dialect: Dialect, limit: int, after: Position | None
) -> tuple[str, tuple[Any, ...]]:
    markers = ("$1", "$2", "$3") if dialect.paramstyle == "numeric_dollar" else ("?",) * 3
    params: tuple[Any, ...] = (PENDING,)
    where = f"evaluation = {markers[0]}"
    if after is not None:
        received = DELIVERIES.encode_value(dialect, "received_at", after[0])
        where += f" AND (received_at, delivery_id) > ({markers[1]}, {markers[2]})"
        params += (received, after[1])
    sql = (
        f"SELECT {', '.join(_PENDING_COLUMNS)} FROM deliveries WHERE {where} "
        f"ORDER BY received_at, delivery_id LIMIT {int(limit)}"
    )
    return sql, params


def _driver_time(dialect: Dialect) -> Callable[[Any], datetime]:
    """A UTCDateTime as the driver returns it -> an aware datetime."""
    return from_sqlite_time if dialect.name == "sqlite" else _aware_time


def _aware_time(value: datetime) -> datetime:
    return value


def _record(row: Any) -> DeliveryRecord:
    return DeliveryRecord(
        row.delivery_id,
        row.webhook_uid,
        row.received_at,
        row.size,
        Label(row.label),
        row.identity,
        row.duplicate_of,
        row.payload,
    )


async def prune(conn: AsyncConnection, now: datetime | None = None) -> int:
    """Delete records older than 7 days, except the newest 50 of each webhook, those not
    evaluated yet and those whose payload runs still point at."""
    cutoff = (now or utcnow()) - RETENTION
    stale_hooks = select(d.c.webhook_uid).where(d.c.received_at < cutoff).distinct()
    ranked = (
        select(d.c.delivery_id, _row_number().label("rn"))
        .where(d.c.webhook_uid.in_(stale_hooks))
        .subquery()
    )
    keep = select(ranked.c.delivery_id).where(ranked.c.rn <= KEEP_NEWEST)
    started_runs = exists().where(t.runs.c.delivery_id == d.c.delivery_id)
    result = await conn.execute(
        delete(d).where(
            d.c.received_at < cutoff,
            d.c.delivery_id.not_in(keep),
            (d.c.evaluation.is_(None)) | (d.c.evaluation != PENDING),
            ~started_runs,
        )
    )
    # replay links whose delivery is gone (a link is written before its delivery reaches the
    # log, hence only old ones)
    r = t.delivery_replays
    gone = ~exists().where(d.c.delivery_id == r.c.delivery_id)
    await conn.execute(delete(r).where(r.c.created_at < cutoff, gone))
    return int(result.rowcount or 0)


def _row_number() -> Any:
    return func.row_number().over(
        partition_by=d.c.webhook_uid, order_by=(desc(d.c.received_at), desc(d.c.delivery_id))
    )


async def require_webhook(conn: AsyncConnection, factory_uid: str, webhook_uid: str) -> None:
    """404 unless the webhook exists, live, in this factory."""
    await get_webhook_row(conn, factory_uid, webhook_uid)


async def list_deliveries(
    conn: AsyncConnection,
    webhook_uid: str,
    limit: int,
    after: Position | None,
    pending: Sequence[DeliveryRecord] = (),
) -> tuple[list[Delivery], bool]:
    """Newest first, with `pending` (accepted, still waiting for the evaluator outside SQL)
    merged in by position."""
    query = select(
        *(d.c.delivery_id, d.c.received_at, d.c.size, d.c.label, d.c.evaluation),
        *(d.c.evaluated_at, d.c.trace, d.c.reason, d.c.duplicate_of),
    ).where(d.c.webhook_uid == webhook_uid)
    if after is not None:
        query = query.where(tuple_(d.c.received_at, d.c.delivery_id) < tuple_(after[0], after[1]))
    query = query.order_by(desc(d.c.received_at), desc(d.c.delivery_id)).limit(limit + 1)
    items = [_item(row) for row in await conn.execute(query)]
    logged = {item.delivery_id for item in items}
    for record in pending:
        position = (record.received_at, record.delivery_id)
        if record.delivery_id not in logged and (after is None or position < after):
            items.append(_pending_item(record))
    items.sort(key=lambda item: item.position, reverse=True)
    page = items[:limit]
    await _attach_runs(conn, page)
    await attach_replays(conn, page)
    return page, len(items) > limit


# explains an evaluated delivery's trace (`delivery.trace`): (conn, uid, the delivery, its
# stored trace, payload, headers)
Explain = Callable[
    [AsyncConnection, str, Delivery, bytes, Any, dict[str, str]],
    Awaitable[None],
]


async def _explain_webhook(
    conn: AsyncConnection,
    webhook_uid: str,
    delivery: Delivery,
    stored: bytes,
    payload: Any,
    _headers: dict[str, str],
) -> None:
    assert delivery.trace is not None
    await delivery_trace.explain_trace(conn, webhook_uid, delivery.trace, stored, payload)


async def get_delivery(
    conn: AsyncConnection,
    webhook_uid: str,
    delivery_id: str,
    pending: DeliveryRecord | None = None,
    explain: Explain = _explain_webhook,
) -> Delivery:
    """One delivery with its payload and request headers (accepted ones); `pending` stands in
    when the log has no row yet (accepted, still waiting for the evaluator outside SQL).
    `explain`: how its trace is explained (a custom webhook's by default)."""
    row = (
        await conn.execute(
            select(d).where(d.c.webhook_uid == webhook_uid, d.c.delivery_id == delivery_id)
        )
    ).first()
    if row is None:
        if pending is None:
            raise NotFound(f"delivery: {delivery_id} not found for this webhook")
        item = _pending_item(pending)
        payload, headers = pending.payload, pending.headers
    else:
        item = _item(row)
        payload, headers = row.payload, row.headers
        await _attach_runs(conn, [item])
    await attach_replays(conn, [item], with_replays=True)
    if item.label is Label.ACCEPTED:
        # deliveries logged before headers were kept have none
        item.headers = headers_of(headers) if headers is not None else None
    if item.label is Label.ACCEPTED and payload is not None:
        item.payload = orjson.loads(payload)
        if item.trace is not None and row is not None:
            headers_read = item.headers if isinstance(item.headers, dict) else {}
            await explain(conn, webhook_uid, item, row.trace, item.payload, headers_read)
    return item


def _item(row: Any) -> Delivery:
    return Delivery(
        delivery_id=row.delivery_id,
        received_at=row.received_at,
        size=row.size,
        label=Label(row.label),
        evaluation=row.evaluation,
        evaluated_at=row.evaluated_at,
        trace=delivery_trace.decode(row.trace),
        replay_of=None,
        reason=row.reason,
        duplicate_of=row.duplicate_of,
        runs=[],
    )


def _pending_item(record: DeliveryRecord) -> Delivery:
    return Delivery(
        delivery_id=record.delivery_id,
        received_at=record.received_at,
        size=record.size,
        label=record.label,
        evaluation="pending",  # PENDING
        evaluated_at=None,
        trace=None,
        replay_of=None,
        runs=[],
    )


async def _attach_runs(conn: AsyncConnection, items: list[Delivery]) -> None:
    by_id = {item.delivery_id: item for item in items if item.evaluation in _EVALUATED}
    if not by_id:
        return
    r = t.runs
    query = (
        select(r.c.delivery_id, r.c.automation_uid, r.c.run_id)
        .where(and_(r.c.delivery_id.in_(list(by_id)), r.c.automation_uid.is_not(None)))
        .order_by(r.c.created_at, r.c.automation_uid)
    )
    for row in await conn.execute(query):
        by_id[row.delivery_id].runs.append(DeliveryRun(row.automation_uid, row.run_id))
    # a provider delivery that continued a work item matched, but started no run of its own
    f = t.work_item_follow_ups
    query = (
        select(f.c.delivery_id, f.c.work_item_id, f.c.run_id)
        .where(f.c.delivery_id.in_(list(by_id)))
        .order_by(f.c.created_at, f.c.work_item_id)
    )
    for row in await conn.execute(query):
        by_id[row.delivery_id].follow_ups.append(DeliveryFollowUp(row.work_item_id, row.run_id))
