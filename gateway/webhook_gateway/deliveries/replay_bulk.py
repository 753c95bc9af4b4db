"""Bulk replay: the accepted deliveries of a time range (optionally of one outcome), oldest
first, replayed one by one through `Replayer.send`; replays themselves are not replayed again.

Bounded: at most MAX_BULK deliveries per request. Rate limited: every replay takes a slot of
the source's delivery rate (a custom webhook's or a provider connection's), and the first one
the backend refuses stops the run; the result lists what was sent and what was not, and the
caller continues after `retry_after` seconds with the same Idempotency-Key (each delivery's
replay is keyed by it, so nothing is sent twice)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import Label
from gateway.foundation.store import tables as t
from gateway.kernel.errors import InvalidRequest, RateLimited, ServiceError
from gateway.webhook_gateway.deliveries import trace as delivery_trace
from gateway.webhook_gateway.deliveries.models import MAX_BULK, BulkAnswer, BulkItem, BulkReplay
from gateway.webhook_gateway.deliveries.replay import Original, Replayer, Source


async def replay_range(
    replayer: Replayer,
    source: Source,
    wanted: BulkReplay,
    idempotency_key: str | None,
    requested_by: str | None,
) -> BulkAnswer:
    if wanted.label != Label.ACCEPTED.value:
        raise InvalidRequest(f"label: only {Label.ACCEPTED.value!r} deliveries have a payload")
    async with replayer.database.read() as conn:
        target = await source(conn)
        originals = await _originals(conn, target.webhook_uid, wanted)
    items: list[BulkItem] = []
    retry_after: int | None = None  # set when the rate limit stopped the run
    for original in originals:
        if retry_after is not None:
            items.append(BulkItem(original.delivery_id, "not_sent", None))
            continue
        key = f"{idempotency_key}:{original.delivery_id}" if idempotency_key else None
        try:
            done = await replayer.send(target, original, key, requested_by)
        except RateLimited as exc:
            retry_after = exc.retry_after
            items.append(BulkItem(original.delivery_id, "not_sent", None))
            continue
        except ServiceError as exc:
            items.append(BulkItem(original.delivery_id, f"refused: {exc.code}", None))
            continue
        status = "replayed" if done.created else "replayed_before"
        items.append(BulkItem(original.delivery_id, status, done.delivery_id))
    return BulkAnswer(items, _counts(items), retry_after)


def _counts(items: list[BulkItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.status] = counts.get(item.status, 0) + 1
    return counts


async def _originals(conn: AsyncConnection, source_uid: str, wanted: BulkReplay) -> list[Original]:
    d, r = t.deliveries, t.delivery_replays
    columns = (d.c.delivery_id, d.c.payload, d.c.received_at, d.c.headers, d.c.trace)
    query = select(*columns).where(
        d.c.webhook_uid == source_uid,
        d.c.label == Label.ACCEPTED.value,
        d.c.payload.is_not(None),
        d.c.received_at >= wanted.since,
        # what the sender sent: replays are in the range too, and a request continued with
        # its key (or sent again) would replay the replays it made
        ~select(r.c.delivery_id).where(r.c.delivery_id == d.c.delivery_id).exists(),
    )
    if wanted.until is not None:
        query = query.where(d.c.received_at < wanted.until)
    query = query.order_by(d.c.received_at, d.c.delivery_id)
    found: list[Original] = []
    # the outcome lives in the trace's JSON: filtered here, reading at most a bounded window
    for row in await conn.execute(query.limit(MAX_BULK * 20)):
        if wanted.outcome is not None and delivery_trace.outcome_of(row.trace) != wanted.outcome:
            continue
        found.append(Original(row.delivery_id, row.payload, row.received_at, row.headers))
        if len(found) >= wanted.limit:
            break
    return found
