"""Backtests: which stored deliveries of a source a trigger (or an automation's triggers) would
match, and for the others what failed. One loop (`backtest`: the window's accepted deliveries,
newest first) and one judge (`judge`) for every source: each stored delivery is normalized again
as the evaluator normalizes it (`source_events.normalized`: a custom webhook's payload is its one
event; a connection's payload, stored headers and bot give its trigger events) and judged by
`judge.decide`, with the matchers the evaluator's index holds. What is read per kind is which
triggers are tested: a webhook's payload filters, a connection's provider triggers (routed by
their factory's repositories as the evaluator routes them). The connection's delivery log is
explained from here too (`explain`).

So a backtest and a live evaluation of the same delivery against the same triggers cannot
disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
import orjson
from sqlalchemy import desc, select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from filters import parse_filter
from gateway.foundation.backends.contract import Label
from gateway.foundation.backends.delivery_rows import headers_of
from gateway.foundation.store import tables as t
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.automations.management import checked_shape, require_automation
from gateway.webhook_gateway.automations.source_events import (
    NOT_JSON,
    WEBHOOK,
    LiveSource,
    normalized,
)
from gateway.webhook_gateway.automations.source_rows import repository_keys
from gateway.webhook_gateway.deliveries import trace as delivery_trace
from gateway.webhook_gateway.deliveries.judge import Tested, decide, payload_tests, provider_test
from gateway.webhook_gateway.deliveries.models import Delivery, FilterTestResult, TestedDelivery
from gateway.webhook_gateway.providers import TriggerFilterError

Verdict = tuple[bool, str | None, str | None]  # matched, the mismatch, the path (key) it names
# judges one stored delivery (its row: delivery_id, received_at, payload, headers)
Judge = Callable[[Any], Verdict]


@dataclass(frozen=True, slots=True)
class Window:
    """The newest `last` accepted deliveries, received at or after `since` when given."""

    last: int = 50
    since: datetime | None = None


def webhook(uid: str) -> LiveSource:
    """A custom webhook as a backtest reads its deliveries (it needs no more of it)."""
    return LiveSource(uid, "", WEBHOOK, "", uid)


def connection(row: Any) -> LiveSource:
    """A provider connection's row as a source."""
    return LiveSource(row.uid, row.name, row.provider, row.team_uid, row.team_uid, row.bot)


def judge(source: LiveSource, tested: Sequence[Tested]) -> Judge:
    """Deliveries of `source` judged by `tested` (`judge.decide`), each normalized again."""

    def judge_one(row: Any) -> Verdict:
        headers = headers_of(row.headers) if row.headers and not source.is_webhook else {}
        events = normalized(source, _parse(row.payload), headers).events
        decided = decide(tested, events)
        if decided.matched:
            return True, None, None
        return False, decided.mismatch, decided.path

    return judge_one


async def backtest(
    conn: AsyncConnection, source_uid: str, judge: Judge, window: Window
) -> FilterTestResult:
    """The window's accepted deliveries of a custom webhook or a provider connection, newest
    first, each as `judge` finds it."""
    results = []
    for row in await accepted_deliveries(conn, source_uid, window):
        matched, mismatch, path = judge(row)
        results.append(TestedDelivery(row.delivery_id, row.received_at, matched, mismatch, path))
    matched_count = sum(1 for item in results if item.matched)
    return FilterTestResult(len(results), matched_count, results)


async def accepted_deliveries(conn: AsyncConnection, source_uid: str, window: Window) -> list[Any]:
    """The window's accepted deliveries of the source, newest first: delivery_id, received_at,
    payload and headers."""
    d = t.deliveries
    columns = [d.c.delivery_id, d.c.received_at, d.c.payload, d.c.headers]
    query = select(*columns).where(
        d.c.webhook_uid == source_uid,
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
        return NOT_JSON


# --- custom webhooks: payload filters ----------------------------------------------------------


def filter_of(webhook_uid: str, raw: JsonObject | None) -> list[Tested]:
    """A payload filter as a one-trigger test (validated by the caller)."""
    return payload_tests(webhook_uid, [(0, parse_filter(raw))])


async def automation_filters(
    conn: AsyncConnection, factory_uid: str, automation_uid: str, webhook_uid: str
) -> list[Tested]:
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
        (row.position, parse_filter(row.payload_filter or {})) for row in await conn.execute(query)
    ]
    if not found:
        raise InvalidRequest(f"automation_uid: {automation_uid} has no trigger on this webhook")
    return payload_tests(webhook_uid, found)


# --- provider connections: provider triggers ---------------------------------------------------


async def explain(
    source: LiveSource,
    conn: AsyncConnection,
    _uid: str,
    delivery: Delivery,
    stored: bytes,
    payload: Any,
    headers: dict[str, str],
) -> None:
    """A connection's delivery trace explained (`delivery_log.get_delivery`'s `explain`)."""
    found = normalized(source, NOT_JSON if payload is None else payload, headers)
    await delivery_trace.explain_events(conn, source.team_uid, delivery, stored, found.events)


def checked_trigger(raw: Any) -> CanonicalTrigger:
    """A trigger as an automation writes it, checked by the automations API's rules; a 400
    names the field from `trigger`."""
    try:
        (trigger,), _references = checked_shape([raw])
    except InvalidRequest as exc:
        raise InvalidRequest(exc.detail.replace("triggers[0]", "trigger", 1)) from None
    return trigger


def trigger_to_test(source: LiveSource, trigger: CanonicalTrigger) -> list[Tested]:
    if trigger.provider != source.kind:
        raise InvalidRequest(
            f"trigger.provider: this connection is {source.kind!r}, not {trigger.provider!r}"
        )
    return [provider_test(0, trigger, None)]


async def automation_to_test(
    conn: AsyncConnection, source: LiveSource, automation_uid: str
) -> list[Tested]:
    """The triggers of the connection's provider of an automation of its team."""
    a, f = t.automations, t.factories
    query = (
        select(a.c.triggers, f.c.repositories)
        .join(f, f.c.uid == a.c.factory_uid)
        .where(a.c.uid == automation_uid, f.c.team_uid == source.team_uid)
    )
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"automation_uid: no automation {automation_uid} in this team")
    repositories = frozenset(repository_keys(row.repositories))
    triggers = msgspec.convert(row.triggers, list[CanonicalTrigger])
    try:
        found = [
            provider_test(i, trigger, repositories)
            for i, trigger in enumerate(triggers)
            if trigger.provider == source.kind
        ]
    except TriggerFilterError as exc:  # stored before the rule that now refuses it when written
        raise InvalidRequest(
            f"automation_uid: a trigger of {automation_uid} has a filter the evaluator cannot "
            f"use ({exc.path}: {exc.message}); write the automation again"
        ) from None
    if not found:
        raise InvalidRequest(f"automation_uid: {automation_uid} has no {source.kind} trigger")
    return found
