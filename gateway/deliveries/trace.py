"""The outcome trace of an accepted delivery: what the evaluator decided, and why.

At evaluation, in the evaluator's batch transaction beside the runs it starts: the outcome and
each enabled automation listening to the webhook, matched or not, with the version (updated_at)
of the automation the evaluator held. That costs a few microseconds a delivery; explaining a
mismatch costs ~10 µs per automation, so it is not done there but when a user reads the
delivery (`explain_trace`): `filters.explain` walks the automation's filter over the stored
payload, with the same semantics as the compiled matcher. When the automation changed since the
evaluation, the explanation is made against its current filter and says so (`filter_changed`).

Outcomes: `matched` (runs started), `no_match`, `no_automations`, `webhook_not_live` (disabled
or deleted before it was evaluated) and `no_foreman` (matched, but the factory has no foreman
agent to run as: no run could start, and the evaluation is `failed`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any, Final, NamedTuple

import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from filters import Filter, FilterError, explain, parse_filter
from gateway.automations.index import STAMP, HookAutomations, Key, stamp_micros
from gateway.backends.delivery_rows import EVALUATED
from gateway.deliveries import models
from gateway.store import tables as t

FAILED: Final = "failed"
MATCHED, NO_MATCH, NO_AUTOMATIONS = "matched", "no_match", "no_automations"
WEBHOOK_NOT_LIVE, NO_FOREMAN = "webhook_not_live", "no_foreman"
NO_WEBHOOK_AUTOMATION: Final = "no enabled automation has a trigger on this webhook"
# one trigger of an automation on a webhook (uid, position): explanations go trigger by trigger
TriggerKey = tuple[str, int]


class Trace(NamedTuple):
    outcome: str
    evaluation: str  # of the delivery: evaluated, or failed
    # {"outcome", "automations": [[automation uid, matched, its updated_at (`stamp_micros`) as
    # the evaluator held it], ...] in the matcher's order}, encoded once: deliveries share it
    encoded: bytes


def _trace(outcome: str, considered: Sequence[tuple[str, bool, str]] = ()) -> Trace:
    evaluation = FAILED if outcome == NO_FOREMAN else EVALUATED
    return Trace(outcome, evaluation, orjson.dumps({"outcome": outcome, "automations": considered}))


NOT_LIVE = _trace(WEBHOOK_NOT_LIVE)
NOTHING_LISTENS = _trace(NO_AUTOMATIONS)


def trace_of(entry: HookAutomations, matched: Collection[Key], has_foreman: bool) -> Trace:
    """The trace of a delivery to `entry`'s live webhook for which its matcher returned
    `matched` (the evaluator keeps the traces it made recently: `cached_trace`)."""
    if not entry.order:
        return NOTHING_LISTENS
    hits = set(matched)
    considered = [
        (uid, uid in hits, str(at)) for uid, at in zip(entry.order, entry.stamps, strict=True)
    ]
    return _trace((MATCHED if has_foreman else NO_FOREMAN) if hits else NO_MATCH, considered)


# Traces made recently, for all webhooks together, least recently used out first. A trace of a
# webhook of 10 automations takes ~2 kB; kept per cached webhook (16,384 of them), they cost the
# evaluator ~50 MB on a store of 10,000 busy webhooks, for a saving of a few microseconds a
# delivery. Bounded here, they cost at most ~2 MB, and busy webhooks still share theirs.
MAX_CACHED_TRACES = 256
_traces: OrderedDict[tuple[int, tuple[Key, ...], bool], tuple[HookAutomations, Trace]] = (
    OrderedDict()
)


def cached_trace(entry: HookAutomations, keys: list[Key], has_foreman: bool) -> Trace:
    """The outcome trace of a delivery to `entry`'s live webhook: made once per set of matches
    while it is among the most recently used (an entry is replaced when the configuration
    changes, so a new entry never meets the traces of the one it replaced)."""
    key = (id(entry), tuple(keys), has_foreman)
    found = _traces.get(key)
    # the entry is kept beside its trace, so its id is not reused while the key is cached
    if found is not None and found[0] is entry:
        _traces.move_to_end(key)
        return found[1]
    trace = trace_of(entry, keys, has_foreman)
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
    provider = raw["provider"]  # a provider delivery's (provider_trace.py)
    events = [models.TriggerEventView(provider=provider, event=name) for name in raw["events"]]
    return models.Trace(raw["outcome"], automations, events)


def outcome_of(stored: bytes | None) -> models.Outcome | None:
    """The outcome of a stored trace (None without one)."""
    if not stored:
        return None
    outcome: models.Outcome = orjson.loads(stored)["outcome"]
    return outcome


def considered(
    filters: Sequence[tuple[TriggerKey, Filter | None]],
    matched: Collection[TriggerKey],
    payload: Any,
) -> list[models.ConsideredAutomation]:
    """One entry per automation (in the order of `filters`): matched if any of its triggers
    matched, else the first mismatch of its first trigger."""
    entries: dict[str, models.ConsideredAutomation] = {}
    for key, tree in filters:
        uid = key[0]
        entry = entries.get(uid)
        if entry is not None and (entry.matched or key not in matched):
            continue
        if key in matched:
            entries[uid] = models.ConsideredAutomation(uid, True)
        else:
            found = explain(tree, payload)
            entries[uid] = models.ConsideredAutomation(
                uid,
                False,
                str(found) if found is not None else None,
                found.path if found is not None else None,
            )
    return list(entries.values())


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
    for entry in missed:
        uid = entry.automation_uid
        own = filters.get(uid)
        if own is None:
            entry.mismatch = "automation deleted, or no longer listening to this webhook"
            continue
        (explained,) = considered(own, (), payload)
        entry.mismatch, entry.path = explained.mismatch, explained.path
        entry.filter_changed = current.get(uid) != stamps.get(uid)


def _canonical(stamp: str) -> str:
    """A trace's stamp as traces hold it now (microseconds); traces written before held the
    stored text of updated_at."""
    return stamp if stamp.isdigit() else str(stamp_micros(stamp))


async def _filters(
    conn: AsyncConnection, webhook_uid: str, uids: list[str]
) -> tuple[dict[str, list[tuple[TriggerKey, Filter | None]]], dict[str, str]]:
    a, tr = t.automations, t.automation_triggers
    query = (
        select(a.c.uid, tr.c.position, tr.c.payload_filter, STAMP)
        .join(tr, tr.c.automation_uid == a.c.uid)
        .where(a.c.uid.in_(uids), tr.c.webhook_uid == webhook_uid)
        .order_by(a.c.uid, tr.c.position)
    )
    filters: dict[str, list[tuple[TriggerKey, Filter | None]]] = {}
    stamps: dict[str, str] = {}
    for row in await conn.execute(query):
        try:
            tree = parse_filter(row.payload_filter or {})
        except FilterError:  # validated on write; the evaluator skips such a trigger too
            continue
        filters.setdefault(row.uid, []).append(((row.uid, row.position), tree))
        stamps[row.uid] = str(stamp_micros(row.stamp))
    return filters, stamps


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
