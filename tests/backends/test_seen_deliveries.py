"""The embedded backend's de-duplication memory: exact to the window, bounded by day."""

from __future__ import annotations

import gc
import time

from gateway import ids
from gateway.backends.seen_deliveries import DAY_MS, SeenDeliveries, seen_key

WEEK_MS = 7 * DAY_MS


def delivery_id_at(ms: int) -> str:
    return f"dlv_{ms:012x}{'ab' * 10}"


def test_ids_carry_their_creation_time() -> None:
    millis = ids.millis_of(ids.new_id("dlv"))
    assert millis is not None and abs(millis - time.time() * 1000) < 5_000
    assert ids.millis_of(delivery_id_at(1_800_000_000_123)) == 1_800_000_000_123
    assert ids.millis_of("not-an-id") is None
    assert ids.millis_of("dlv_zzzzzzzzzzzz") is None


def test_a_copy_is_a_duplicate_until_the_window_ends_exactly() -> None:
    seen = SeenDeliveries(WEEK_MS)
    start = 1_800_000_000_000
    key = seen_key("whk_a", "evt-1")
    first = delivery_id_at(start)
    seen.remember(key, first, start)
    assert seen.first(key, start + 1) == first
    assert seen.first(key, start + WEEK_MS - 1) == first
    assert seen.first(key, start + WEEK_MS) is None
    # keys are per webhook and per identity
    assert seen.first(seen_key("whk_b", "evt-1"), start + 1) is None
    assert seen.first(seen_key("whk_a", "evt-2"), start + 1) is None


def test_after_the_window_the_next_copy_is_remembered_afresh() -> None:
    seen = SeenDeliveries(WEEK_MS)
    start = 1_800_000_000_000
    key = seen_key("whk_a", "evt-1")
    seen.remember(key, delivery_id_at(start), start)
    later = start + WEEK_MS + 5
    assert seen.first(key, later) is None
    second = delivery_id_at(later)
    seen.remember(key, second, later)
    assert seen.first(key, later + 1) == second


def test_days_past_the_window_are_dropped_whole() -> None:
    seen = SeenDeliveries(WEEK_MS)
    start = 1_800_000_000_000
    for day in range(10):
        at = start + day * DAY_MS
        seen.remember(seen_key("whk_a", f"evt-{day}"), delivery_id_at(at), at)
    # the days wholly before (last arrival - window) are gone; 8 days of arrivals remain at most
    assert len(seen) <= 8
    last = start + 9 * DAY_MS
    assert seen.first(seen_key("whk_a", "evt-9"), last + 1) == delivery_id_at(last)
    assert seen.first(seen_key("whk_a", "evt-0"), last + 1) is None


def test_forget_undoes_remember() -> None:
    seen = SeenDeliveries(WEEK_MS)
    start = 1_800_000_000_000
    key = seen_key("whk_a", "evt-1")
    seen.remember(key, delivery_id_at(start), start)
    seen.forget(key, start)
    assert seen.first(key, start + 1) is None


def test_entries_are_not_tracked_by_the_garbage_collector() -> None:
    seen = SeenDeliveries(WEEK_MS)
    start = 1_800_000_000_000
    for i in range(1000):
        seen.remember(seen_key("whk_a", f"evt-{i}"), delivery_id_at(start + i), start + i)
    for day in seen._days.values():
        key, value = next(iter(day.items()))
        assert not gc.is_tracked(key) and not gc.is_tracked(value)
