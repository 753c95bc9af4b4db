"""The embedded backend's de-duplication memory: exact to the window, bounded whatever the
traffic (the newest entries exactly, older ones in per-day filters that answer MAYBE)."""

from __future__ import annotations

import gc
import time

from gateway.foundation.backends.seen_deliveries import (
    DAY_MS,
    MAYBE,
    MIN_EXACT,
    DayFilter,
    SeenDeliveries,
    seen_key,
)
from gateway.kernel import ids

WEEK_MS = 7 * DAY_MS
START = 1_800_000_000_000


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
    key = seen_key("whk_a", "evt-1")
    first = delivery_id_at(START)
    seen.remember(key, first, START)
    assert seen.first(key, START + 1) == first
    assert seen.first(key, START + WEEK_MS - 1) == first
    assert seen.first(key, START + WEEK_MS) is None
    # keys are per webhook and per identity
    assert seen.first(seen_key("whk_b", "evt-1"), START + 1) is None
    assert seen.first(seen_key("whk_a", "evt-2"), START + 1) is None


def test_after_the_window_the_next_copy_is_remembered_afresh() -> None:
    seen = SeenDeliveries(WEEK_MS)
    key = seen_key("whk_a", "evt-1")
    seen.remember(key, delivery_id_at(START), START)
    later = START + WEEK_MS + 5
    assert seen.first(key, later) is None
    second = delivery_id_at(later)
    seen.remember(key, second, later)
    assert seen.first(key, later + 1) == second


def test_memory_is_bounded_and_older_keys_answer_maybe() -> None:
    seen = SeenDeliveries(WEEK_MS, exact=MIN_EXACT)
    keys = [seen_key("whk_a", f"evt-{i}") for i in range(3 * MIN_EXACT)]
    for i, key in enumerate(keys):
        seen.remember(key, delivery_id_at(START + i), START + i)
    assert len(seen) <= MIN_EXACT  # held exactly: at most `exact`
    now = START + 3 * MIN_EXACT
    assert seen.first(keys[-1], now) == delivery_id_at(START + 3 * MIN_EXACT - 1)
    assert all(seen.first(key, now) == MAYBE for key in keys[:MIN_EXACT])  # never a false "new"
    fresh = [seen.first(seen_key("whk_a", f"new-{i}"), now) for i in range(2000)]
    assert fresh.count(MAYBE) <= 20  # the filters' false positives stay rare
    assert fresh.count(None) == len(fresh) - fresh.count(MAYBE)
    # past the window the filters forget too
    assert seen.first(keys[0], START + WEEK_MS + DAY_MS) is None


def test_a_day_filter_holds_what_it_was_given() -> None:
    day = DayFilter(bits=1 << 19)
    keys = [seen_key("w", str(i)) for i in range(5000)]
    for key in keys[:2500]:
        day.add(key)
    assert all(day.may_hold(key) for key in keys[:2500])
    false_positives = sum(day.may_hold(key) for key in keys[2500:])
    assert false_positives < 125  # under 5 % at this load (~0.4 % expected)


def test_entries_are_not_tracked_by_the_garbage_collector() -> None:
    seen = SeenDeliveries(WEEK_MS)
    for i in range(1000):
        seen.remember(seen_key("whk_a", f"evt-{i}"), delivery_id_at(START + i), START + i)
    key, value = next(iter(seen._held.items()))
    assert not gc.is_tracked(key) and not gc.is_tracked(value)
    assert not gc.is_tracked(seen._held)
