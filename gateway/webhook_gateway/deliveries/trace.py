"""The outcome trace of an accepted delivery, whatever its source: what the evaluator decided,
and why. One trace: the same outcomes, the same stored form (`{"outcome", "automations": [[uid,
matched, stamp], ...]}`, a provider delivery's with its events beside), made by one function
from what the one index matched (`trace_of`), one cache of the traces made recently, one
decoding, and explanations made by one judge (`deliveries/judge.py`, the backtests' too); what
a source adds is below.

A custom webhook's: at evaluation, in the evaluator's batch transaction beside the runs it
starts: the outcome and each enabled automation listening to the webhook, matched or not,
with the version (updated_at) of the automation the evaluator held. That costs a few
microseconds a delivery; explaining a mismatch costs ~10 µs per automation, so it is not done
there but when a user reads the delivery (`explain_trace`): `filters.explain` walks the
automation's filter over the stored payload, with the same semantics as the compiled matcher.
When the automation changed since the evaluation, the explanation is made against its current
filter and says so (`filter_changed`).

Outcomes: `matched` (runs started), `no_match`, `no_automations`, `webhook_not_live` (disabled
or deleted before it was evaluated) and `no_foreman` (matched, but the factory has no foreman
agent to run as: no run could start, and the evaluation is `failed`).

A provider connection's: the events it was normalized to and, per automation considered,
matched or not. At evaluation (in the batch transaction, beside the runs): the outcome, the
event names, how many automations were considered (those with a trigger on one of the events,
in the factories the events reach), and the ones that matched with the version of each the
evaluator held. Only the matched ones are named: a team of 100 automations listening to
GitHub's issue events would otherwise store a list of 100 with every delivery (~6 kB; measured:
a quarter of the evaluator's CPU per delivery, docs/performance-history.md).

Explaining costs more than matching, so it is done when the delivery is read (`explain_events`):
the stored payload and headers are normalized again (the same pure function), the automations
that listen to those events now are listed, and for each the trigger that decided and the filter
key its event failed are found with `judge.decide` (its mismatches named by
`gateway.webhook_gateway.providers.failing_key`, the reference semantics the compiled matchers are
held to). An automation changed since the evaluation says so
(`filter_changed`), as does one that matched and is gone.

Outcomes beyond the webhook ones: `connection_not_live` (the connection was disabled or deleted
between its 202 and its evaluation) and `no_events` (the delivery is no trigger event: most
actions of most providers).

`no_automations` says why (the API's `reason`): a webhook's, that no enabled automation listens
to it; a provider delivery's, stored as a code (`no_automations_reason`) and said when read
(`reason_text`), that its repository is in no factory's repositories while automations of the
team listen to its events elsewhere (`NOT_LISTED`), else that none listens to them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec
import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from filters import Filter, FilterError, parse_filter
from gateway.foundation.backends.delivery_rows import EVALUATED
from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.webhook_gateway.automations.source_events import (
    ROUTED,
    LiveSource,
    SourceEvent,
    webhook_event,
)
from gateway.webhook_gateway.automations.source_rows import STAMP, repository_keys, stamp_micros
from gateway.webhook_gateway.automations.trigger_index import Listeners, Route, SourceAutomation
from gateway.webhook_gateway.deliveries import models
from gateway.webhook_gateway.deliveries.judge import decide, payload_tests, provider_test, reaches
from gateway.webhook_gateway.providers import PROVIDERS, TriggerEvent

FAILED: Final = "failed"
MATCHED, NO_MATCH, NO_AUTOMATIONS = "matched", "no_match", "no_automations"
WEBHOOK_NOT_LIVE, NO_FOREMAN = "webhook_not_live", "no_foreman"
NO_WEBHOOK_AUTOMATION: Final = "no enabled automation has a trigger on this webhook"
CONNECTION_NOT_LIVE: Final = "connection_not_live"
NO_EVENTS: Final = "no_events"
REPOSITORY_KEY: Final = "repos"  # the key named when the factory does not list the repository
# why a provider delivery reached no automation (stored as the trace's `reason`)
NOT_LISTED: Final = "repository_not_listed"  # automations listen, in factories of other repos
NO_TRIGGER: Final = "no_trigger"  # no enabled automation of the team listens to the events
# one trigger of an automation on a webhook (uid, position): explanations go trigger by trigger
TriggerKey = tuple[str, int]


class Trace(NamedTuple):
    outcome: str
    evaluation: str  # of the delivery: evaluated, or failed
    # {"outcome", "automations": [[automation uid, matched, its updated_at (`stamp_micros`, a
    # JSON number; traces written before 2026-12-03 hold it as text) as the evaluator held it],
    # ...] in the matcher's order}, encoded once: deliveries share it
    encoded: bytes


def _trace(outcome: str, automations: Sequence[tuple[str, bool, int]] = (), **events: Any) -> Trace:
    """`events`: a provider delivery's (`provider`, `events`, `considered`), stored beside."""
    evaluation = FAILED if outcome == NO_FOREMAN else EVALUATED
    raw = {"outcome": outcome, **events, "automations": automations}
    return Trace(outcome, evaluation, orjson.dumps(raw))


NOT_LIVE = _trace(WEBHOOK_NOT_LIVE)
NOTHING_LISTENS = _trace(NO_AUTOMATIONS)
# the connection is gone: no events are read
CONNECTION_GONE = _trace(CONNECTION_NOT_LIVE, provider="", events=(), considered=0)


# Traces made recently, for every source together (keyed by the index entry they were made
# from, and what matched), least recently used out first. A trace of a webhook of 10
# automations takes ~2 kB; kept per cached webhook (16,384 of them), they cost the evaluator
# ~50 MB on a store of 10,000 busy webhooks, for a saving of a few microseconds a delivery.
# Bounded here, they cost at most ~2 MB, and busy sources still share theirs (most deliveries
# of a busy connection have the same events, route and matches).
MAX_CACHED_TRACES = 256
_traces: OrderedDict[tuple[Any, ...], tuple[object, Trace]] = OrderedDict()


def _recent(key: tuple[Any, ...], entry: object, make: Callable[[], Trace]) -> Trace:
    """The trace cached under `key` for index entry `entry`, else `make()`'s, cached (an entry
    is replaced when the configuration changes, so a new entry never meets the traces of the
    one it replaced; it is kept beside its trace, so its id is not reused while cached)."""
    found = _traces.get(key)
    if found is not None and found[0] is entry:
        _traces.move_to_end(key)
        return found[1]
    trace = make()
    _traces[key] = (entry, trace)
    if len(_traces) > MAX_CACHED_TRACES:
        _traces.popitem(last=False)
    return trace


def decode(stored: bytes | None) -> models.Trace | None:
    """The stored trace as the API shows it (mismatches not explained yet)."""
    if not stored:
        return None
    raw = orjson.loads(stored)
    automations = [
        models.ConsideredAutomation(uid, matched) for uid, matched, _stamp in raw["automations"]
    ]
    if "events" not in raw:
        trace = models.Trace(raw["outcome"], automations)
        if raw["outcome"] == NO_AUTOMATIONS:
            trace.reason = NO_WEBHOOK_AUTOMATION
        return trace
    provider = raw["provider"]  # a provider delivery's
    events = [models.TriggerEventView(provider=provider, event=name) for name in raw["events"]]
    return models.Trace(raw["outcome"], automations, events)


def outcome_of(stored: bytes | None) -> models.Outcome | None:
    """The outcome of a stored trace (None without one)."""
    if not stored:
        return None
    outcome: models.Outcome = orjson.loads(stored)["outcome"]
    return outcome


async def explain_trace(
    conn: AsyncConnection, webhook_uid: str, trace: models.Trace, stored: bytes, payload: Any
) -> None:
    """Fills in `mismatch` and `path` of the automations of `trace` (decoded from `stored`)
    that did not match (see above)."""
    stamps = {
        uid: _canonical(stamp) for uid, _matched, stamp in orjson.loads(stored)["automations"]
    }
    missed = [a for a in trace.automations if not a.matched]
    if not missed:
        return
    filters, current = await _filters(conn, webhook_uid, [a.automation_uid for a in missed])
    event = webhook_event(webhook_uid, payload)
    for entry in missed:
        uid = entry.automation_uid
        own = filters.get(uid)
        if own is None:
            entry.mismatch = "automation deleted, or no longer listening to this webhook"
            continue
        # its first trigger's mismatch, as evaluated (a changed filter says so below)
        first = payload_tests(webhook_uid, own[:1])[0]
        entry.mismatch, entry.path = first.explain(event, (event,))
        entry.filter_changed = current.get(uid) != stamps.get(uid)


def _canonical(stamp: int | str) -> str:
    """A trace's stamp as the text of its microseconds, whichever way the trace holds it: a
    number (since 2026-12-03: the evaluator no longer formats it per delivery), the digits, or
    (before those) the stored text of updated_at."""
    if isinstance(stamp, int):
        return str(stamp)
    return stamp if stamp.isdigit() else str(stamp_micros(stamp))


async def _filters(
    conn: AsyncConnection, webhook_uid: str, uids: list[str]
) -> tuple[dict[str, list[tuple[int, Filter | None]]], dict[str, str]]:
    a, tr = t.automations, t.automation_triggers
    query = (
        select(a.c.uid, tr.c.position, tr.c.payload_filter, STAMP)
        .join(tr, tr.c.automation_uid == a.c.uid)
        .where(a.c.uid.in_(uids), tr.c.webhook_uid == webhook_uid)
        .order_by(a.c.uid, tr.c.position)
    )
    filters: dict[str, list[tuple[int, Filter | None]]] = {}
    stamps: dict[str, str] = {}
    for row in await conn.execute(query):
        try:
            tree = parse_filter(row.payload_filter or {})
        except FilterError:  # validated on write; the evaluator skips such a trigger too
            continue
        filters.setdefault(row.uid, []).append((row.position, tree))
        stamps[row.uid] = str(stamp_micros(row.stamp))
    return filters, stamps


# --- at evaluation ---------------------------------------------------------------------------


def not_live(source_uid: str) -> Trace:
    """A delivery whose source was disabled or deleted between its 202 and its evaluation."""
    return CONNECTION_GONE if ids.is_connection(source_uid) else NOT_LIVE


def trace_of(
    source: LiveSource,
    entry: Listeners,
    events: Sequence[SourceEvent],
    considered: Route,
    hits: Sequence[SourceAutomation],
    started: int,
) -> Trace:
    """The trace of a delivery of `source` whose `events` were matched against `entry`:
    `considered` is what they reached, `hits` what matched, `started` how many of those have
    an agent to run as (a factory without a foreman starts nothing). Made once per set of
    matches while it is among the most recently used."""
    if not events:
        return _NO_EVENTS.get(source.kind) or _provider(NO_EVENTS, source.kind)
    # per delivery: kept short. The kind: event names are shared (GitHub's and Linear's
    # issue_created); a one-event delivery's route is the entry's own (its id says what it
    # considered), a delivery of several events considers a union made for it.
    if len(events) == 1:
        names: tuple[str, ...] = (events[0].event,)
        reached: object = id(considered)
    else:
        names, reached = tuple([event.event for event in events]), considered.automations
    matched = tuple([a.uid for a in hits])
    key = (id(entry), source.kind, names, reached, matched, started)
    return _recent(key, entry, lambda: _make(source, entry, events, considered, hits, started))


def _make(
    source: LiveSource,
    entry: Listeners,
    events: Sequence[SourceEvent],
    considered: Route,
    hits: Sequence[SourceAutomation],
    started: int,
) -> Trace:
    automations = considered.automations
    outcome = (
        NO_AUTOMATIONS
        if not automations
        else NO_MATCH
        if not hits
        else MATCHED
        if started
        else NO_FOREMAN
    )
    if source.is_webhook:  # every automation listening, matched or not
        hit = set(hits)
        return _trace(outcome, [(a.uid, a in hit, a.stamp) for a in automations])
    names = [event.event for event in events]
    if outcome == NO_AUTOMATIONS:
        reason = no_automations_reason(entry, events)
        return _provider(NO_AUTOMATIONS, source.kind, names, reason=reason)
    matched = [(a.uid, True, a.stamp) for a in hits]
    return _provider(outcome, source.kind, names, len(automations), matched)


def _provider(
    outcome: str,
    provider: str,
    events: Sequence[str] = (),
    considered: int = 0,
    matched: Sequence[tuple[str, bool, int]] = (),  # the matched ones only: [uid, true, stamp]
    reason: str | None = None,
) -> Trace:
    stored = {"provider": provider, "events": events, "considered": considered}
    if reason is not None:
        stored["reason"] = reason
    return _trace(outcome, matched, **stored)


_NO_EVENTS = {provider: _provider(NO_EVENTS, provider) for provider in PROVIDERS}


def no_automations_reason(entry: Listeners, events: Sequence[SourceEvent]) -> str:
    """Why `events` reached no automation of `entry`'s team: `NOT_LISTED` when automations of
    the team listen to one of them in factories that do not list the event's repository."""
    wanted = {(event.kind, event.event) for event in events if event.kind in ROUTED}
    if wanted and any(key[:2] in wanted for key in entry.routes):
        return NOT_LISTED
    return NO_TRIGGER


def reason_text(reason: str | None, events: Sequence[TriggerEvent]) -> str | None:
    """The stored reason as the trace, the console and the log say it (`events`: a provider
    delivery's, as normalized)."""
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


# --- read side ----------------------------------------------------------------------------


class _Current(msgspec.Struct):
    uid: str
    factory_uid: str
    triggers: list[CanonicalTrigger]
    repositories: frozenset[str]
    stamp: str
    updated_at: datetime


async def explain_events(
    conn: AsyncConnection,
    team_uid: str,
    delivery: models.Delivery,
    stored: bytes,
    events: Sequence[SourceEvent],
) -> None:
    """Fills in `delivery.trace` (decoded from `stored`): the events with their values, and
    every automation of the team listening to them now in the factories they reach, with its
    factory, the trigger that decided and the filter key its event failed (`judge.decide`);
    `events`: the delivery normalized again."""
    trace = delivery.trace
    if trace is None or trace.events is msgspec.UNSET:
        return
    normalized = [e.trigger for e in events if e.trigger is not None]
    trace.events = [
        models.TriggerEventView(provider=e.provider, event=e.event, values=dict(e.values))
        for e in normalized
    ]
    raw = orjson.loads(stored)
    matched = {uid: _canonical(stamp) for uid, _hit, stamp in raw["automations"]}
    if not events:
        return
    if trace.outcome == NO_AUTOMATIONS:
        reason = reason_text(raw.get("reason"), normalized)
        if reason is not None:
            trace.reason = reason
    entries: list[models.ConsideredAutomation] = []
    for found in await _listening(conn, team_uid, normalized):
        tested = [
            provider_test(i, trigger, found.repositories, strict=False)
            for i, trigger in enumerate(found.triggers)
        ]
        decided = decide(tested, events)
        was_matched = found.uid in matched
        entry = models.ConsideredAutomation(found.uid, was_matched, factory_uid=found.factory_uid)
        key = None if decided.matched or decided.position < 0 else decided.path
        entry.trigger, entry.key = decided.position, None if was_matched else key
        if not was_matched and key is not None:
            entry.mismatch, entry.path = decided.mismatch, key
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


class TraceWrites:
    """The traces of a batch, encoded before its transaction; written for the deliveries the
    transaction claimed, as one executemany."""

    def __init__(self, traces: dict[str, Trace]) -> None:
        self._rows = {d: (trace.encoded, trace.evaluation) for d, trace in traces.items()}

    def __len__(self) -> int:
        return len(self._rows)

    def take(self, delivery_id: str) -> tuple[bytes, str] | None:
        """(trace, evaluation) of a delivery whose log row is still to be inserted: it goes
        into that row, and `write` leaves it out."""
        return self._rows.pop(delivery_id, None)

    async def write(self, conn: AsyncConnection, claimed: Collection[str]) -> None:
        rows = [(raw, evaluation, d) for d, (raw, evaluation) in self._rows.items() if d in claimed]
        if rows:
            await conn.exec_driver_sql(_update_sql(conn.dialect.paramstyle), rows)


def _update_sql(paramstyle: str) -> str:
    markers = ("$1", "$2", "$3") if paramstyle == "numeric_dollar" else ("?",) * 3
    return (
        f"UPDATE deliveries SET trace = {markers[0]}, evaluation = {markers[1]} "
        f"WHERE delivery_id = {markers[2]}"
    )
