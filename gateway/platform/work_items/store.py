"""The evaluator's side of work items, through its port (`evaluator/run_platform.py`): a
batch's lookup, the work items its runs make, and the follow-ups of deliveries that continue
them, all in the batch's transaction (only for the deliveries it claimed: once each)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from sqlalchemy import ARRAY, String, any_, bindparam, select, update
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Prepared, Values
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.platform.runs.conversations.follow_ups import ProviderFollowUp, provider_follow_ups
from gateway.platform.work_items.events import record_created
from gateway.webhook_gateway.evaluator.run_platform import (
    KnownWorkItem,
    NewWorkItem,
    WorkItemFollowUp,
    WorkItemKey,
)
from gateway.webhook_gateway.evaluator.run_rows import ATTACHMENTS
from gateway.webhook_gateway.evaluator.work_item_plans import follow_up_file

FIRST_STAGE = "TRIAGE"  # a work item's stage when its first event made it
CHUNK = 500
w = t.work_items
# A batch writes a row per new work item and three per follow-up (the follow-up, its payload
# attachment in the layout of a run's own, `run_rows.ATTACHMENTS`, and its run message): through
# BulkInsert, encoded once per column type, not through SQLAlchemy's per-value processing
# (docs/performance.md, "Provider follow-ups: rows in the driver's form")
WORK_ITEMS = BulkInsert(
    w,
    (
        *("id", "team_uid", "factory_uid", "provider", "kind", "ref", "url", "target", "stage"),
        *("run_id", "followup_count", "created_at", "updated_at"),
    ),
)
FOLLOW_UPS = BulkInsert(
    t.work_item_follow_ups,
    ("id", "work_item_id", "run_id", "delivery_id", "message_ref", "created_at"),
)


# built once: a list given to `in_` is coerced value by value each time (~0.2 µs a ref)
_COLUMNS = (w.c.id, w.c.team_uid, w.c.factory_uid, w.c.provider, w.c.ref, w.c.run_id)
_BY_REFS = select(*_COLUMNS).where(w.c.ref.in_(bindparam("refs", expanding=True)))
# PostgreSQL: the refs as one array, one statement whatever their count: IN lists of 500
# parameters took 16-17 µs of wall time a delivery in the evaluator's plan, the array 2-3
# (docs/performance.md, 2026-12-04; not their preparation, which cost ~0.2)
_BY_REF_ARRAY = select(*_COLUMNS).where(w.c.ref == any_(bindparam("refs", type_=ARRAY(String))))


async def find_work_items(
    conn: AsyncConnection, refs: Collection[str]
) -> dict[WorkItemKey, KnownWorkItem]:
    found: dict[WorkItemKey, KnownWorkItem] = {}
    wanted = sorted(refs)
    if conn.dialect.name == "postgresql":
        chunks = [await conn.execute(_BY_REF_ARRAY, {"refs": wanted})]
    else:
        chunks = [
            await conn.execute(_BY_REFS, {"refs": wanted[i : i + CHUNK]})
            for i in range(0, len(wanted), CHUNK)
        ]
    for rows in chunks:
        for row in rows:
            key = WorkItemKey(row.factory_uid, row.provider, row.ref)
            found[key] = KnownWorkItem(row.id, row.team_uid, row.run_id)
    return found


async def start_work_items(conn: AsyncConnection, items: Sequence[NewWorkItem]) -> None:
    """Inserts the work items, and announces those this transaction made. Another evaluator
    may have made one of them since the batch looked (a batch is planned before its
    transaction): the runs then join that one.

    PostgreSQL: ON CONFLICT DO NOTHING, then a look-up of the few that were there. A batch
    writing the same work item at the same time waits for the other's commit and skips it; a
    look-up first would not see it, and the insert would fail the whole batch on the unique key
    (the consumer then writes it again a delivery at a time). SQLite's writers take turns, so
    a look-up first sees every one there is (and a multi-row INSERT ... RETURNING costs twice
    as much there, `BulkInsert.insert_new`)."""
    rows = _rows(conn.dialect, items)
    if conn.dialect.name == "sqlite":
        known = await find_work_items(conn, {item.key.ref for item in items})
        fresh = [item for item in items if item.key not in known]
        await WORK_ITEMS.insert(conn, rows.only({item.id for item in fresh}))
    else:
        made = await WORK_ITEMS.insert_new(conn, rows)
        fresh = [item for item in items if item.id in made]
        there = {item.key.ref for item in items if item.id not in made}
        known = await find_work_items(conn, there) if there else {}
    if fresh:
        await record_created(conn, fresh, FIRST_STAGE)
    for item in items:
        other = known.get(item.key)
        if other is not None and other.id != item.id:
            r = t.runs
            await conn.execute(
                update(r).where(r.c.work_item_id == item.id).values(work_item_id=other.id)
            )


def _rows(dialect: Dialect, items: Sequence[NewWorkItem]) -> Prepared:
    """The work items' rows as the driver takes them, in WORK_ITEMS' column order (a mapping a
    row, through the generic encoder, cost ~2.5 µs more a work item)."""
    encode_time, encode_json = (WORK_ITEMS.encoder(dialect, c) for c in ("created_at", "target"))
    values: list[Values] = []
    for item in items:
        key, at = item.key, encode_time(item.created_at)
        values.append(
            (
                *(item.id, item.team_uid, key.factory_uid, key.provider, item.kind, key.ref),
                *(item.url, encode_json(item.target), FIRST_STAGE, item.run_id, 0, at, at),
            )
        )
    return Prepared("id", [item.id for item in items], values)


async def continue_work_items(
    conn: AsyncConnection, follow_ups: Sequence[WorkItemFollowUp]
) -> None:
    """Each follow-up goes to its run as a message, the delivery's payload attached (a file
    that points at the delivery, like the run's own event-payload.json), and counts on its
    work item. A provider message that already continued the work item (another delivery of
    the same Slack message) continues it no more. A few statements per batch, not per
    follow-up: a busy issue's deliveries are most of a batch's."""
    r = t.runs
    run_ids = sorted({f.run_id for f in follow_ups})
    query = select(r.c.run_id, r.c.conversation_id).where(r.c.run_id.in_(run_ids))
    conversations = {run_id: conversation for run_id, conversation in await conn.execute(query)}
    seen = await _messages_seen(conn, {f.message_ref for f in follow_ups if f.message_ref})
    # rows in the driver's form, as the evaluator builds a run's: ids from one supply, and one
    # clock reading, each follow-up a microsecond after the one before (a run's messages list
    # in the order its follow-ups came)
    supply, encode_time = ids.IdSupply(), FOLLOW_UPS.encoder(conn.dialect, "created_at")
    start = utcnow()
    attachments: list[Values] = []
    messages: list[ProviderFollowUp] = []
    rows: list[Values] = []
    counts: dict[str, tuple[int, datetime]] = {}  # work item id -> follow-ups, the last one's time
    for follow_up in follow_ups:
        conversation_id = conversations.get(follow_up.run_id)
        if conversation_id is None:  # the run was deleted since
            continue
        if follow_up.message_ref is not None:
            message = (follow_up.work_item_id, follow_up.message_ref)
            if message in seen:
                continue
            seen.add(message)
        now = start + timedelta(microseconds=len(rows))
        at = encode_time(now)
        attachment_id = supply.id("att")
        attachments.append(
            (
                *(attachment_id, conversation_id, follow_up.run_id),
                *(follow_up_file(follow_up.delivery_id), "application/json"),
                *(follow_up.payload_size, follow_up.delivery_id, at),
            )
        )
        messages.append(ProviderFollowUp(follow_up.run_id, follow_up.message, [attachment_id], now))
        rows.append(
            (
                *(supply.id("wif"), follow_up.work_item_id, follow_up.run_id),
                *(follow_up.delivery_id, follow_up.message_ref, at),
            )
        )
        count, _at = counts.get(follow_up.work_item_id, (0, now))
        counts[follow_up.work_item_id] = (count + 1, now)
    if not rows:
        return
    await ATTACHMENTS.insert(conn, Prepared("attachment_id", [], attachments))
    await provider_follow_ups(conn, messages)
    await FOLLOW_UPS.insert(conn, Prepared("id", [], rows))
    await conn.execute(
        update(w)
        .where(w.c.id == bindparam("item"))
        .values(followup_count=w.c.followup_count + bindparam("count"), updated_at=bindparam("at")),
        [{"item": item, "count": n, "at": at} for item, (n, at) in counts.items()],
    )


async def _messages_seen(conn: AsyncConnection, refs: set[str]) -> set[tuple[str, str]]:
    """(work item id, message ref) of the follow-ups these provider messages made already."""
    if not refs:
        return set()
    f = t.work_item_follow_ups
    query = select(f.c.work_item_id, f.c.message_ref).where(f.c.message_ref.in_(sorted(refs)))
    return {(item_id, ref) for item_id, ref in await conn.execute(query)}
