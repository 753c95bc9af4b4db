"""Backtests: which stored deliveries of a source a trigger (or an automation's triggers) would
match, and for the others what failed. One loop (`backtest`: the window's accepted deliveries,
newest first) and one judge (`judge`) for every source: each stored delivery is normalized again
as the evaluator normalizes it (`source_events.normalized`: a custom webhook's payload is its one
event; a connection's payload, stored headers and bot give its trigger events), and each tested
trigger is tried on the events it listens to, with the matcher the evaluator's index holds for
it. The first trigger that matches decides; else the first mismatch is named.

What a kind adds is how a trigger is compiled and a mismatch explained (`Tested`):

- a custom webhook's payload filters (`payload_tests`): compiled with `filters.compile_many`,
  explained by `filters.explain` (the semantics the compiled matcher is held to);
- a provider connection's triggers (`provider_tests`): compiled by `compile_trigger_filter`
  over `plain_filter`, factories reached by repository as the evaluator routes them; a mismatch
  is explained by `delivery_trace.failing`, the reference semantics the compiled matchers are
  held to. The connection's delivery log is explained from here too (`explain`).

So a backtest and a live evaluation of the same delivery against the same triggers cannot
disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import msgspec
import orjson
from sqlalchemy import desc, select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from filters import Filter, compile_many, parse_filter
from filters import explain as explain_filter
from gateway.automations.management import checked_shape, require_automation
from gateway.automations.source_events import (
    NOT_JSON,
    WEBHOOK,
    LiveSource,
    SourceEvent,
    normalized,
)
from gateway.automations.source_rows import plain_filter, repository_keys
from gateway.backends.contract import Label
from gateway.backends.delivery_rows import headers_of
from gateway.deliveries import trace as delivery_trace
from gateway.deliveries.models import Delivery, FilterTestResult, TestedDelivery
from gateway.errors import InvalidRequest, NotFound
from gateway.providers import TriggerFilterError, compile_trigger_filter
from gateway.store import tables as t
from gateway.types import JsonObject

Verdict = tuple[bool, str | None, str | None]  # matched, the mismatch, the path (key) it names
# judges one stored delivery (its row: delivery_id, received_at, payload, headers)
Judge = Callable[[Any], Verdict]
Explained = tuple[str | None, str | None]  # the mismatch, the path (key) it names


@dataclass(frozen=True, slots=True)
class Window:
    """The newest `last` accepted deliveries, received at or after `since` when given."""

    last: int = 50
    since: datetime | None = None


class Tested(NamedTuple):
    """A trigger as a backtest runs it: what it listens to ((kind, event): a webhook's is
    (`webhook`, its uid)), whether an event matches it (the evaluator's compiled matcher, and
    for a provider's the factories it reaches), and why one does not (given the delivery's
    events)."""

    position: int
    listens: tuple[str, str]
    matches: Callable[[SourceEvent], bool]
    explain: Callable[[SourceEvent, Sequence[SourceEvent]], Explained]


def webhook(uid: str) -> LiveSource:
    """A custom webhook as a backtest reads its deliveries (it needs no more of it)."""
    return LiveSource(uid, "", WEBHOOK, "", uid)


def connection(row: Any) -> LiveSource:
    """A provider connection's row as a source."""
    return LiveSource(row.uid, row.name, row.provider, row.team_uid, row.team_uid, row.bot)


def judge(source: LiveSource, tested: Sequence[Tested]) -> Judge:
    """Deliveries of `source` judged by `tested`: matched when a trigger matches one of the
    events it listens to; else the first mismatch of a trigger listening to one of them
    (`event`: none listens to the delivery's events)."""

    def judge_one(row: Any) -> Verdict:
        headers = headers_of(row.headers) if row.headers and not source.is_webhook else {}
        events = normalized(source, _parse(row.payload), headers).events
        first: Explained | None = None
        for item in tested:
            for event in events:
                if (event.kind, event.event) != item.listens:
                    continue
                if item.matches(event):
                    return True, None, None
                if first is None:
                    first = item.explain(event, events)
        if first is None:
            names = ", ".join(e.event for e in events) or "none"
            return (
                False,
                f"event: the delivery is {names}, which the trigger does not listen to",
                "event",
            )
        return False, first[0], first[1]

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


def payload_tests(webhook_uid: str, filters: Sequence[tuple[int, Filter | None]]) -> list[Tested]:
    """A webhook's payload filters (position, filter) as tested triggers."""
    return [_payload_test(webhook_uid, position, tree) for position, tree in filters]


def _payload_test(webhook_uid: str, position: int, tree: Filter | None) -> Tested:
    matcher = compile_many({0: tree})  # the matcher the evaluator's index holds

    def matches(event: SourceEvent) -> bool:
        return bool(matcher.match(event.values))

    def explain(event: SourceEvent, _events: Sequence[SourceEvent]) -> Explained:
        found = explain_filter(tree, event.values)
        return (str(found), found.path) if found is not None else (None, None)

    return Tested(position, (WEBHOOK, webhook_uid), matches, explain)


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
    await delivery_trace.explain_events(conn, source.team_uid, delivery, stored, found.triggers())


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


def provider_test(
    position: int, trigger: CanonicalTrigger, repositories: frozenset[str] | None
) -> Tested:
    """`repositories`: those of the trigger's factory (None: a trigger tried alone, no factory
    to route by)."""
    matcher = compile_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)

    def matches(event: SourceEvent) -> bool:
        normalized_event = event.trigger
        assert normalized_event is not None  # a provider's events carry theirs
        return delivery_trace.reaches(normalized_event, repositories) and matcher(normalized_event)

    def explain(event: SourceEvent, events: Sequence[SourceEvent]) -> Explained:
        assert event.trigger is not None
        key = delivery_trace.failing(trigger, repositories, event.trigger) or "filter"
        triggers = [e.trigger for e in events if e.trigger is not None]
        return delivery_trace.mismatch(key, triggers), key

    return Tested(position, (trigger.provider, trigger.event), matches, explain)
