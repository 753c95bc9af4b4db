"""The evaluator's cache of outcome traces: shared while recent, bounded in all."""

from __future__ import annotations

from filters import compile_many
from gateway.domain import delivery_trace
from gateway.domain.automation_index import HookAutomations, LiveHook


def _entry(webhook: str) -> HookAutomations:
    automations = ((f"{webhook}-a", "2026-01-01 00:00:00"), (f"{webhook}-b", "2026-01-02"))
    hook = LiveHook(webhook, "hook", "factory", "team", "foreman")
    order = tuple(uid for uid, _stamp in automations)
    stamps = dict(automations)
    return HookAutomations(hook, b"sig", compile_many({}), order, stamps, 1, automations)


def test_a_webhook_s_deliveries_share_the_trace_of_the_same_matches() -> None:
    entry = _entry("w1")
    keys = [("w1-a", 0)]
    first = delivery_trace.cached_trace(entry, keys, True)
    assert delivery_trace.cached_trace(entry, list(keys), True) is first
    assert first.outcome == delivery_trace.MATCHED
    assert first.considered == (
        ("w1-a", True, "2026-01-01 00:00:00"),
        ("w1-b", False, "2026-01-02"),
    )
    other = delivery_trace.cached_trace(entry, [], True)
    assert other.outcome == delivery_trace.NO_MATCH


def test_a_new_entry_of_the_same_webhook_gets_traces_of_its_own() -> None:
    keys = [("w2-a", 0)]
    old = delivery_trace.cached_trace(_entry("w2"), keys, True)
    replaced = _entry("w2")
    assert delivery_trace.cached_trace(replaced, keys, True) is not old
    assert delivery_trace.cached_trace(replaced, keys, False).outcome == delivery_trace.NO_FOREMAN


def test_the_cache_holds_at_most_its_bound_whatever_the_number_of_webhooks() -> None:
    entries = [_entry(f"hook{i}") for i in range(delivery_trace.MAX_CACHED_TRACES + 50)]
    for entry in entries:
        delivery_trace.cached_trace(entry, [(entry.order[0], 0)], True)
    assert len(delivery_trace._traces) == delivery_trace.MAX_CACHED_TRACES
    # the most recent are kept, the oldest went first
    newest = entries[-1]
    assert delivery_trace._traces[(id(newest), ((newest.order[0], 0),), True)][0] is newest
    assert all(found[0] is not entries[0] for found in delivery_trace._traces.values())
