"""Backtests: which stored deliveries of a source a trigger (or an automation's triggers) would
match, and for the others what failed. One loop for every source (`backtest`: the window's
accepted deliveries, newest first); what differs is how a delivery is judged:

- a custom webhook's, by payload filters (`payload_judge`): compiled with `filters.compile_many`
  (the matcher the evaluator holds per webhook) and explained by `trace.considered` (what the
  evaluator stores in an outcome trace);
- a provider connection's, by provider triggers (`trigger_judge`): each stored delivery is
  normalized again (`gateway.providers`: payload, stored headers, the connection's bot) and
  matched with the evaluator's own compiled matchers (`compile_trigger_filter` over
  `plain_filter`, factories reached by repository as the evaluator routes them); a mismatch is
  explained by `delivery_trace.failing`, the reference semantics the compiled matchers are held
  to. The connection's delivery log is explained from here too (`explain`).

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
from filters import Filter, compile_many, parse_filter
from gateway.automations.management import checked_shape, require_automation
from gateway.automations.source_rows import plain_filter, repository_keys
from gateway.backends.contract import Label
from gateway.backends.delivery_rows import headers_of
from gateway.deliveries import trace as delivery_trace
from gateway.deliveries.models import Delivery, FilterTestResult, TestedDelivery
from gateway.deliveries.trace import TriggerKey, considered
from gateway.errors import InvalidRequest, NotFound
from gateway.providers import (
    EventMatcher,
    TriggerEvent,
    TriggerFilterError,
    compile_trigger_filter,
    normalize,
)
from gateway.store import tables as t
from gateway.types import JsonObject

_NOT_JSON = object()  # as the evaluator: matches only when there is no filter
Verdict = tuple[bool, str | None, str | None]  # matched, the mismatch, the path (key) it names
# judges one stored delivery (its row: delivery_id, received_at, payload, headers)
Judge = Callable[[Any], Verdict]


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


def payload_judge(filters: Sequence[tuple[TriggerKey, Filter | None]]) -> Judge:
    """A custom webhook's deliveries judged by payload filters: compiled as the evaluator holds
    them (`filters.compile_many`), explained as its outcome traces are (`trace.considered`)."""
    matcher = compile_many(dict(filters))

    def judge(row: Any) -> Verdict:
        payload = _parse(row.payload)
        entry = considered(filters, matcher.match(payload), payload)[0]
        return entry.matched, entry.mismatch, entry.path

    return judge


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
        return _NOT_JSON


# --- provider connections ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connection:
    """What reading a connection's deliveries needs of it."""

    uid: str
    provider: str
    team_uid: str
    bot: str | None


@dataclass(frozen=True, slots=True)
class Tested:
    """A trigger as a backtest runs it: compiled, and in the factory it belongs to."""

    position: int
    trigger: CanonicalTrigger
    matcher: EventMatcher
    repositories: frozenset[str] | None  # None: a trigger tried alone (no factory to route by)


def events_of(connection: Connection, payload: Any, headers: dict[str, str]) -> list[TriggerEvent]:
    return normalize(connection.provider, headers, payload, connection.bot)


async def explain(
    connection: Connection,
    conn: AsyncConnection,
    _uid: str,
    delivery: Delivery,
    stored: bytes,
    payload: Any,
    headers: dict[str, str],
) -> None:
    """A connection's delivery trace explained (`delivery_log.get_delivery`'s `explain`)."""
    events = events_of(connection, payload, headers)
    await delivery_trace.explain_events(conn, connection.team_uid, delivery, stored, events)


def checked_trigger(raw: Any) -> CanonicalTrigger:
    """A trigger as an automation writes it, checked by the automations API's rules; a 400
    names the field from `trigger`."""
    try:
        (trigger,), _references = checked_shape([raw])
    except InvalidRequest as exc:
        raise InvalidRequest(exc.detail.replace("triggers[0]", "trigger", 1)) from None
    return trigger


def trigger_to_test(connection: Connection, trigger: CanonicalTrigger) -> list[Tested]:
    if trigger.provider != connection.provider:
        raise InvalidRequest(
            f"trigger.provider: this connection is {connection.provider!r}, "
            f"not {trigger.provider!r}"
        )
    return [_tested(0, trigger, None)]


async def automation_to_test(
    conn: AsyncConnection, connection: Connection, automation_uid: str
) -> list[Tested]:
    """The triggers of the connection's provider of an automation of its team."""
    a, f = t.automations, t.factories
    query = (
        select(a.c.triggers, f.c.repositories)
        .join(f, f.c.uid == a.c.factory_uid)
        .where(a.c.uid == automation_uid, f.c.team_uid == connection.team_uid)
    )
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"automation_uid: no automation {automation_uid} in this team")
    repositories = frozenset(repository_keys(row.repositories))
    triggers = msgspec.convert(row.triggers, list[CanonicalTrigger])
    try:
        found = [
            _tested(i, trigger, repositories)
            for i, trigger in enumerate(triggers)
            if trigger.provider == connection.provider
        ]
    except TriggerFilterError as exc:  # stored before the rule that now refuses it when written
        raise InvalidRequest(
            f"automation_uid: a trigger of {automation_uid} has a filter the evaluator cannot "
            f"use ({exc.path}: {exc.message}); write the automation again"
        ) from None
    if not found:
        raise InvalidRequest(
            f"automation_uid: {automation_uid} has no {connection.provider} trigger"
        )
    return found


def _tested(
    position: int, trigger: CanonicalTrigger, repositories: frozenset[str] | None
) -> Tested:
    matcher = compile_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    return Tested(position, trigger, matcher, repositories)


def trigger_judge(connection: Connection, tested: Sequence[Tested]) -> Judge:
    """A provider connection's deliveries judged by provider triggers: each normalized again
    and matched with the evaluator's compiled matchers; a mismatch names the key that failed
    (`event`: the triggers listen to none of the delivery's events)."""

    def judge(row: Any) -> Verdict:
        try:
            payload = orjson.loads(row.payload)
        except orjson.JSONDecodeError:
            payload = None
        headers = headers_of(row.headers) if row.headers else {}
        events = events_of(connection, payload, headers)
        key = _first_mismatch(tested, events)
        return key is None, None if key is None else _shown(key, events), key

    return judge


def _first_mismatch(tested: Sequence[Tested], events: Sequence[TriggerEvent]) -> str | None:
    """None when a trigger matches one of `events` (the compiled matcher decides); else the
    key the first trigger listening to one of them failed, or `event` when none listens."""
    first: str | None = None
    for item in tested:
        for event in events:
            if (item.trigger.provider, item.trigger.event) != (event.provider, event.event):
                continue
            if delivery_trace.reaches(event, item.repositories) and item.matcher(event):
                return None
            if first is None:
                first = delivery_trace.failing(item.trigger, item.repositories, event)
                first = first or "filter"
    return first or "event"


def _shown(key: str, events: Sequence[TriggerEvent]) -> str:
    if key == "event":
        names = ", ".join(e.event for e in events) or "none"
        return f"event: the delivery is {names}, which the trigger does not listen to"
    return delivery_trace.mismatch(key, events)
