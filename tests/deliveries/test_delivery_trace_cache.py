"""The evaluator's cache of outcome traces: shared while recent, bounded in all."""

from __future__ import annotations

import orjson

from gateway.webhook_gateway.automations.source_events import WEBHOOK, LiveSource, SourceEvent
from gateway.webhook_gateway.automations.source_rows import stamp_micros
from gateway.webhook_gateway.automations.trigger_index import Listeners, Route, SourceAutomation
from gateway.webhook_gateway.deliveries import trace as delivery_trace

JAN_1, JAN_2 = stamp_micros("2026-01-01 00:00:00"), stamp_micros("2026-01-02")


def _entry(webhook: str, foreman: str | None = "foreman") -> Listeners:
    automations = [
        SourceAutomation(f"{webhook}-{name}", "factory", "team", foreman, stamp)
        for name, stamp in (("a", JAN_1), ("b", JAN_2))
    ]
    route = Route.of([(a, None, None) for a in automations])
    return Listeners(webhook, b"sig", 1, {(WEBHOOK, webhook): route}, {})


def _trace(entry: Listeners, matched: list[str]) -> delivery_trace.Trace:
    source = LiveSource(entry.scope, "hook", WEBHOOK, "team", entry.scope)
    event = SourceEvent(WEBHOOK, entry.scope, {}, (WEBHOOK, entry.scope))
    route = entry.route(event)
    hits = [a for a in route.automations if a.uid in matched]
    started = sum(1 for a in hits if a.agent_uid is not None)
    return delivery_trace.trace_of(source, entry, [event], route, hits, started)


def test_stamps_are_microseconds_since_the_epoch_whatever_the_driver_returns() -> None:
    from datetime import UTC, datetime

    assert JAN_1 == 1_767_225_600_000_000
    assert stamp_micros("2026-01-01 00:00:00.000001") == JAN_1 + 1
    assert stamp_micros(datetime(2026, 1, 1, 1, tzinfo=UTC)) == JAN_1 + 3_600_000_000
    assert stamp_micros("2026-01-01 00:00:00+00:00") == JAN_1  # a PostgreSQL stamp as text


def test_a_webhook_s_deliveries_share_the_trace_of_the_same_matches() -> None:
    entry = _entry("w1")
    first = _trace(entry, ["w1-a"])
    assert _trace(entry, ["w1-a"]) is first
    assert first.outcome == delivery_trace.MATCHED
    assert orjson.loads(first.encoded) == {
        "outcome": "matched",
        "automations": [["w1-a", True, JAN_1], ["w1-b", False, JAN_2]],
    }
    assert first.evaluation == "evaluated"
    other = _trace(entry, [])
    assert other.outcome == delivery_trace.NO_MATCH


def test_a_new_entry_of_the_same_webhook_gets_traces_of_its_own() -> None:
    old = _trace(_entry("w2"), ["w2-a"])
    replaced = _entry("w2")
    assert _trace(replaced, ["w2-a"]) is not old
    no_foreman = _trace(_entry("w2", foreman=None), ["w2-a"])
    assert (no_foreman.outcome, no_foreman.evaluation) == (delivery_trace.NO_FOREMAN, "failed")


def test_the_cache_holds_at_most_its_bound_whatever_the_number_of_webhooks() -> None:
    entries = [_entry(f"hook{i}") for i in range(delivery_trace.MAX_CACHED_TRACES + 50)]
    for entry in entries:
        _trace(entry, [f"{entry.scope}-a"])
    assert len(delivery_trace._traces) == delivery_trace.MAX_CACHED_TRACES
    # the most recent are kept, the oldest went first
    assert any(found[0] is entries[-1] for found in delivery_trace._traces.values())
    assert all(found[0] is not entries[0] for found in delivery_trace._traces.values())
