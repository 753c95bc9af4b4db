"""Provider triggers against a connection's stored deliveries: the delivery log of a provider
connection, explained, and filter backtests of provider triggers.

Each stored delivery is normalized again (`delivery_runs.delivery_events`'s pure function:
payload, stored headers, the connection's bot) and matched with the evaluator's own compiled
matchers (`compile_trigger_filter` over `plain_filter`, factories reached by repository as
the evaluator routes them); a mismatch is explained by `provider_trace.failing`, the reference
semantics the compiled matchers are held to. A backtest and a live evaluation of the same
delivery cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from gateway.automations.management import checked_shape
from gateway.automations.provider_index import plain_filter, repository_keys
from gateway.backends.delivery_rows import headers_of
from gateway.deliveries import provider_trace
from gateway.deliveries.filter_backtest import Window, accepted_deliveries
from gateway.deliveries.models import Delivery, FilterTestResult, TestedDelivery
from gateway.errors import InvalidRequest, NotFound
from gateway.providers import (
    EventMatcher,
    TriggerEvent,
    TriggerFilterError,
    compile_trigger_filter,
    normalize,
)
from gateway.store import tables as t


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
    await provider_trace.explain(conn, connection.team_uid, delivery, stored, events)


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


async def backtest(
    conn: AsyncConnection, connection: Connection, tested: Sequence[Tested], window: Window
) -> FilterTestResult:
    results = []
    for row in await accepted_deliveries(conn, connection.uid, window, headers=True):
        try:
            payload = orjson.loads(row.payload)
        except orjson.JSONDecodeError:
            payload = None
        headers = headers_of(row.headers) if row.headers else {}
        events = events_of(connection, payload, headers)
        key = _first_mismatch(tested, events)
        results.append(
            TestedDelivery(
                row.delivery_id,
                row.received_at,
                key is None,
                None if key is None else _shown(key, events),
                key,
            )
        )
    matched = sum(1 for item in results if item.matched)
    return FilterTestResult(len(results), matched, results)


def _first_mismatch(tested: Sequence[Tested], events: Sequence[TriggerEvent]) -> str | None:
    """None when a trigger matches one of `events` (the compiled matcher decides); else the
    key the first trigger listening to one of them failed, or `event` when none listens."""
    first: str | None = None
    for item in tested:
        for event in events:
            if (item.trigger.provider, item.trigger.event) != (event.provider, event.event):
                continue
            if provider_trace.reaches(event, item.repositories) and item.matcher(event):
                return None
            if first is None:
                first = provider_trace.failing(item.trigger, item.repositories, event)
                first = first or "filter"
    return first or "event"


def _shown(key: str, events: Sequence[TriggerEvent]) -> str:
    if key == "event":
        names = ", ".join(e.event for e in events) or "none"
        return f"event: the delivery is {names}, which the trigger does not listen to"
    return provider_trace.mismatch(key, events)
