"""The evaluator's cache of outcome traces: shared while recent, bounded in all."""

from __future__ import annotations

from array import array

import orjson

from filters import compile_many
from gateway.automations.index import HookAutomations, LiveHook, stamp_micros
from gateway.deliveries import trace as delivery_trace

JAN_1, JAN_2 = stamp_micros("2026-01-01 00:00:00"), stamp_micros("2026-01-02")


def _entry(webhook: str) -> HookAutomations:
    hook = LiveHook(webhook, "hook", "factory", "team", "foreman")
    order = (f"{webhook}-a", f"{webhook}-b")
    return HookAutomations(hook, b"sig", compile_many({}), order, array("q", [JAN_1, JAN_2]), 1)


def test_stamps_are_microseconds_since_the_epoch_whatever_the_driver_returns() -> None:
    from datetime import UTC, datetime

    assert JAN_1 == 1_767_225_600_000_000
    assert stamp_micros("2026-01-01 00:00:00.000001") == JAN_1 + 1
    assert stamp_micros(datetime(2026, 1, 1, 1, tzinfo=UTC)) == JAN_1 + 3_600_000_000
    assert stamp_micros("2026-01-01 00:00:00+00:00") == JAN_1  # a PostgreSQL stamp as text


def test_a_webhook_s_deliveries_share_the_trace_of_the_same_matches() -> None:
    entry = _entry("w1")
    keys = ["w1-a"]
    first = delivery_trace.cached_trace(entry, keys, True)
    assert delivery_trace.cached_trace(entry, list(keys), True) is first
    assert first.outcome == delivery_trace.MATCHED
    assert orjson.loads(first.encoded) == {
        "outcome": "matched",
        "automations": [["w1-a", True, str(JAN_1)], ["w1-b", False, str(JAN_2)]],
    }
    assert first.evaluation == "evaluated"
    other = delivery_trace.cached_trace(entry, [], True)
    assert other.outcome == delivery_trace.NO_MATCH


def test_a_new_entry_of_the_same_webhook_gets_traces_of_its_own() -> None:
    keys = ["w2-a"]
    old = delivery_trace.cached_trace(_entry("w2"), keys, True)
    replaced = _entry("w2")
    assert delivery_trace.cached_trace(replaced, keys, True) is not old
    no_foreman = delivery_trace.cached_trace(replaced, keys, False)
    assert (no_foreman.outcome, no_foreman.evaluation) == (delivery_trace.NO_FOREMAN, "failed")


def test_the_cache_holds_at_most_its_bound_whatever_the_number_of_webhooks() -> None:
    entries = [_entry(f"hook{i}") for i in range(delivery_trace.MAX_CACHED_TRACES + 50)]
    for entry in entries:
        delivery_trace.cached_trace(entry, [entry.order[0]], True)
    assert len(delivery_trace._traces) == delivery_trace.MAX_CACHED_TRACES
    # the most recent are kept, the oldest went first
    newest = entries[-1]
    assert delivery_trace._traces[(id(newest), (newest.order[0],), True)][0] is newest
    assert all(found[0] is not entries[0] for found in delivery_trace._traces.values())
