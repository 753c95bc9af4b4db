"""The outcome trace of a provider delivery: the events it was normalized to and, per
automation considered, matched or not.

At evaluation (in the batch transaction, beside the runs): the outcome, the event names, how
many automations were considered (those with a trigger on one of the events, in the factories
the events reach), and the ones that matched with the version of each the evaluator held. Only
the matched ones are named: a team of 100 automations listening to GitHub's issue events would
otherwise store a list of 100 with every delivery (~6 kB; measured: a quarter of the evaluator's
CPU per delivery, docs/performance-history.md).

Explaining costs more than matching, so it is done when the delivery is read (`explain`): the
stored payload and headers are normalized again (the same pure function), the automations that
listen to those events now are listed, and for each the trigger that decided and the filter
key its event failed are found with `gateway.providers.failing_key`, the reference semantics
the compiled matchers are held to. An automation changed since the evaluation says so
(`filter_changed`), as does one that matched and is gone.

Outcomes beyond the webhook ones: `connection_not_live` (the connection was disabled or
deleted between its 202 and its evaluation) and `no_events` (the delivery is no trigger event:
most actions of most providers).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import msgspec
import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from factory_format.triggers import event_spec
from gateway.automations.index import STAMP, stamp_micros
from gateway.automations.provider_index import (
    ROUTED,
    ProviderAutomation,
    Route,
    TeamTriggers,
    plain_filter,
    repository_keys,
)
from gateway.backends.delivery_rows import EVALUATED
from gateway.deliveries import models
from gateway.deliveries.trace import (
    FAILED,
    MATCHED,
    NO_AUTOMATIONS,
    NO_FOREMAN,
    NO_MATCH,
    Trace,
)
from gateway.providers import (
    PROVIDERS,
    TriggerEvent,
    TriggerFilterError,
    failing_key,
    parse_trigger_filter,
)
from gateway.providers.values import NAMES
from gateway.store import tables as t

CONNECTION_NOT_LIVE: Final = "connection_not_live"
NO_EVENTS: Final = "no_events"
REPOSITORY_KEY: Final = "repos"  # the key named when the factory does not list the repository


# why a provider delivery reached no automation (stored as the trace's `reason`)
NOT_LISTED: Final = "repository_not_listed"  # automations listen, in factories of other repos
NO_TRIGGER: Final = "no_trigger"  # no enabled automation of the team listens to the events


def _trace(
    outcome: str,
    provider: str,
    events: Sequence[str] = (),
    considered: int = 0,
    matched: Sequence[tuple[str, bool, str]] = (),
    reason: str | None = None,
) -> Trace:
    evaluation = FAILED if outcome == NO_FOREMAN else EVALUATED
    raw: dict[str, Any] = {
        "outcome": outcome,
        "provider": provider,
        "events": events,
        "considered": considered,
        "automations": matched,  # the matched ones only: [uid, true, stamp]
    }
    if reason is not None:
        raw["reason"] = reason
    return Trace(outcome, evaluation, orjson.dumps(raw))


def no_automations_reason(entry: TeamTriggers, events: Sequence[TriggerEvent]) -> str:
    """Why `events` reached no automation of `entry`'s team: `NOT_LISTED` when automations of
    the team listen to one of them in factories that do not list the event's repository."""
    wanted = {(event.provider, event.event) for event in events if event.provider in ROUTED}
    if wanted and any(key[:2] in wanted for key in entry.routes):
        return NOT_LISTED
    return NO_TRIGGER


def reason_text(reason: str | None, events: Sequence[TriggerEvent]) -> str | None:
    """The stored reason as the trace, the console and the log say it."""
    named = ", ".join(dict.fromkeys(f"{e.provider} {e.event}" for e in events)) or "its events"
    if reason == NOT_LISTED:
        repository = next((e.repository for e in events if e.repository), None) or "?"
        return (
            f"repository {repository} is in no factory's repositories: the automations "
            f"listening to {named} are in factories that list other repositories (add it to "
            "`repositories` in factory.yaml, or PATCH the factory)"
        )
    if reason == NO_TRIGGER:
        return f"no enabled automation of the team has a trigger on {named}"
    return None


NOT_LIVE = _trace(CONNECTION_NOT_LIVE, "")  # the connection is gone: no events are read


def no_events(provider: str) -> Trace:
    return _NO_EVENTS.get(provider) or _trace(NO_EVENTS, provider)


_NO_EVENTS = {provider: _trace(NO_EVENTS, provider) for provider in PROVIDERS}

# Traces made recently (see trace.cached_trace): most deliveries of a busy connection share
# theirs (same events, same route, same matches), so each is encoded once.
MAX_CACHED_TRACES = 256
_traces: OrderedDict[tuple[Any, ...], tuple[TeamTriggers, Trace]] = OrderedDict()


def provider_trace(
    entry: TeamTriggers,
    events: Sequence[TriggerEvent],
    considered: Route,
    hits: Sequence[ProviderAutomation],
    started: int,
) -> Trace:
    """The trace of a delivery whose `events` were matched against `entry`: `considered` is
    what they reached, `hits` what matched, `started` how many of those have an agent to run
    as (a factory without a foreman starts nothing)."""
    names = tuple(event.event for event in events)
    key = (id(entry), names, considered.automations, tuple(a.uid for a in hits), started)
    found = _traces.get(key)
    if found is not None and found[0] is entry:
        _traces.move_to_end(key)
        return found[1]
    reason = None if considered.automations else no_automations_reason(entry, events)
    trace = _make(events[0].provider, names, considered, hits, started, reason)
    _traces[key] = (entry, trace)
    if len(_traces) > MAX_CACHED_TRACES:
        _traces.popitem(last=False)
    return trace


def _make(
    provider: str,
    names: Sequence[str],
    considered: Route,
    hits: Sequence[ProviderAutomation],
    started: int,
    reason: str | None,
) -> Trace:
    if not considered.automations:
        return _trace(NO_AUTOMATIONS, provider, names, reason=reason)
    matched = [(a.uid, True, str(a.stamp)) for a in hits]
    outcome = NO_MATCH if not hits else MATCHED if started else NO_FOREMAN
    return _trace(outcome, provider, names, len(considered.automations), matched)


# --- read side ----------------------------------------------------------------------------


class _Current(msgspec.Struct):
    uid: str
    factory_uid: str
    triggers: list[CanonicalTrigger]
    repositories: frozenset[str]
    stamp: str
    updated_at: datetime


async def explain(
    conn: AsyncConnection,
    team_uid: str,
    delivery: models.Delivery,
    stored: bytes,
    events: Sequence[TriggerEvent],
) -> None:
    """Fills in `delivery.trace` (decoded from `stored`): the events with their values, and
    every automation of the team listening to them now in the factories they reach, with its
    factory, the trigger that decided and the filter key its event failed; `events`: the
    delivery normalized again."""
    trace = delivery.trace
    if trace is None or trace.events is msgspec.UNSET:
        return
    trace.events = [
        models.TriggerEventView(provider=e.provider, event=e.event, values=dict(e.values))
        for e in events
    ]
    raw = orjson.loads(stored)
    matched = {uid: stamp for uid, _hit, stamp in raw["automations"]}
    if not events:
        return
    if trace.outcome == NO_AUTOMATIONS:
        reason = reason_text(raw.get("reason"), events)
        if reason is not None:
            trace.reason = reason
    entries: list[models.ConsideredAutomation] = []
    for found in await _listening(conn, team_uid, events):
        position, key = deciding(found.triggers, found.repositories, events)
        was_matched = found.uid in matched
        entry = models.ConsideredAutomation(found.uid, was_matched, factory_uid=found.factory_uid)
        entry.trigger, entry.key = position, None if was_matched else key
        if not was_matched and key is not None:
            entry.mismatch, entry.path = mismatch(key, events), key
        if was_matched:
            entry.filter_changed = found.stamp != matched[found.uid]
        else:
            evaluated = delivery.evaluated_at
            entry.filter_changed = evaluated is not None and found.updated_at > evaluated
        entries.append(entry)
    listed = {entry.automation_uid for entry in entries}
    for uid in matched:
        if uid not in listed:
            gone = models.ConsideredAutomation(uid, True, "deleted, disabled or changed since")
            entries.append(gone)
    trace.automations = entries


def deciding(
    triggers: Sequence[CanonicalTrigger],
    repositories: frozenset[str],
    events: Sequence[TriggerEvent],
) -> tuple[int, str | None]:
    """(the position of the trigger that decided, the key it failed or None): the first
    trigger matching one of `events`, else the first listening to one of them."""
    first: tuple[int, str | None] | None = None
    for position, trigger in enumerate(triggers):
        for event in events:
            if (trigger.provider, trigger.event) != (event.provider, event.event):
                continue
            key = failing(trigger, repositories, event)
            if key is None:
                return position, None
            if first is None:
                first = (position, key)
    return first if first is not None else (-1, None)


def reaches(event: TriggerEvent, repositories: frozenset[str] | None) -> bool:
    """Whether `event` reaches a factory listing `repositories` (None: no factory to route
    by, a trigger tried alone)."""
    if repositories is None or event.provider not in ROUTED:
        return True
    return any(repo in repositories for repo in event.values.get("repos", ()))


def failing(
    trigger: CanonicalTrigger, repositories: frozenset[str] | None, event: TriggerEvent
) -> str | None:
    """The key `event` fails on `trigger` in a factory listing `repositories` (`repos` when a
    GitHub or GitLab factory does not list the event's repository), or None if it matches."""
    if not reaches(event, repositories):
        return REPOSITORY_KEY
    try:
        conditions = parse_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    except TriggerFilterError:
        return "filter"  # stored invalid: the evaluator skips such a trigger too
    key = failing_key(conditions, event)
    return None if key is None else _shown(trigger, key)


def _shown(trigger: CanonicalTrigger, key: str) -> str:
    """A by-name key as the file writes it: `team_ids:names` -> `teams (names)`."""
    if not key.endswith(NAMES):
        return key
    canonical = key.removesuffix(NAMES)
    spec = event_spec(trigger.provider, trigger.event)
    alias = next((a.name for a in spec.aliases if a.canonical == canonical), None) if spec else None
    return f"{alias or canonical} (names)"


def mismatch(key: str, events: Sequence[TriggerEvent]) -> str:
    if key == REPOSITORY_KEY and events and events[0].repository:
        return f"repos: the factory's repositories do not list {events[0].repository}"
    if key.endswith(" (names)"):
        return f"{key}: the payload names none of the listed ones"
    values = events[0].values.get(key) if events else None
    if values is None:
        return f"{key}: the payload does not tell it (docs/providers.md)"
    return f"{key}: the event's {orjson.dumps(values).decode()} fail the filter"


async def _listening(
    conn: AsyncConnection, team_uid: str, events: Sequence[TriggerEvent]
) -> list[_Current]:
    """The team's enabled automations with a trigger on one of `events`, in a factory the
    events reach, in creation order."""
    a, f = t.automations, t.factories
    query = (
        select(
            *(a.c.uid, a.c.factory_uid, a.c.triggers, STAMP, a.c.updated_at),
            f.c.repositories,
        )
        .join(f, f.c.uid == a.c.factory_uid)
        .where(f.c.team_uid == team_uid, a.c.enabled)
        .order_by(a.c.created_at, a.c.uid)
    )
    wanted = {(e.provider, e.event) for e in events}
    found: list[_Current] = []
    for row in await conn.execute(query):
        triggers = msgspec.convert(row.triggers, list[CanonicalTrigger])
        if not any((tr.provider, tr.event) in wanted for tr in triggers):
            continue
        repositories = frozenset(repository_keys(row.repositories))
        if not any(reaches(e, repositories) for e in events):
            continue
        current = _Current(
            row.uid,
            row.factory_uid,
            triggers,
            repositories,
            str(stamp_micros(row.stamp)),
            row.updated_at,
        )
        found.append(current)
    return found
