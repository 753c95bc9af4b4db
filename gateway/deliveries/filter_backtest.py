"""Filter backtest: which stored deliveries of a webhook a payload filter (or an automation's
triggers) would match, and for the others the first condition that fails.

Compiled and explained with the evaluator's own code: `filters.compile_many` (the matcher the
evaluator holds per webhook) answers, and `delivery_trace.considered` (what the evaluator stores
in an outcome trace) explains. So a backtest and a live evaluation of the same payload against
the same filters cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import desc, select
from sqlalchemy.ext.asyncio import AsyncConnection

from filters import Filter, compile_many, parse_filter
from gateway.automations.management import require_automation
from gateway.backends.contract import Label
from gateway.deliveries.models import FilterTestResult, TestedDelivery
from gateway.deliveries.trace import TriggerKey, considered
from gateway.errors import InvalidRequest
from gateway.store import tables as t
from gateway.types import JsonObject

_NOT_JSON = object()  # as the evaluator: matches only when there is no filter


@dataclass(frozen=True, slots=True)
class Window:
    """The newest `last` accepted deliveries, received at or after `since` when given."""

    last: int = 50
    since: datetime | None = None


def filter_of(raw: JsonObject | None) -> list[tuple[TriggerKey, Filter | None]]:
    """A payload filter as a one-trigger filter list (validated by the caller)."""
    return [(("filter", 0), parse_filter(raw))]


async def automation_filters(
    conn: AsyncConnection, factory_uid: str, automation_uid: str, webhook_uid: str
) -> list[tuple[TriggerKey, Filter | None]]:
    """The payload filters of an automation's triggers on this webhook, as the evaluator reads
    them."""
    await require_automation(conn, factory_uid, automation_uid)
    tr = t.automation_triggers
    query = (
        select(tr.c.position, tr.c.payload_filter)
        .where(tr.c.automation_uid == automation_uid, tr.c.webhook_uid == webhook_uid)
        .order_by(tr.c.position)
    )
    found = [
        ((automation_uid, row.position), parse_filter(row.payload_filter or {}))
        for row in await conn.execute(query)
    ]
    if not found:
        raise InvalidRequest(f"automation_uid: {automation_uid} has no trigger on this webhook")
    return found


async def backtest(
    conn: AsyncConnection,
    webhook_uid: str,
    filters: Sequence[tuple[TriggerKey, Filter | None]],
    window: Window,
) -> FilterTestResult:
    matcher = compile_many(dict(filters))
    results = []
    for row in await accepted_deliveries(conn, webhook_uid, window):
        payload = _parse(row.payload)
        entry = considered(filters, matcher.match(payload), payload)[0]
        results.append(
            TestedDelivery(
                row.delivery_id, row.received_at, entry.matched, entry.mismatch, entry.path
            )
        )
    matched = sum(1 for item in results if item.matched)
    return FilterTestResult(len(results), matched, results)


async def accepted_deliveries(
    conn: AsyncConnection, webhook_uid: str, window: Window, *, headers: bool = False
) -> list[Any]:
    """The window's accepted deliveries of the webhook (or connection), newest first:
    delivery_id, received_at, payload (and headers)."""
    d = t.deliveries
    columns = [d.c.delivery_id, d.c.received_at, d.c.payload]
    if headers:
        columns.append(d.c.headers)
    query = select(*columns).where(
        d.c.webhook_uid == webhook_uid,
        d.c.label == Label.ACCEPTED.value,
        d.c.payload.is_not(None),
    )
    if window.since is not None:
        query = query.where(d.c.received_at >= window.since)
    query = query.order_by(desc(d.c.received_at), desc(d.c.delivery_id)).limit(window.last)
    return list(await conn.execute(query))


def _parse(payload: bytes) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return _NOT_JSON
