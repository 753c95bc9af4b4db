"""Python's cyclic collector in the evaluator's process (`gateway worker`, and the child
`gateway serve` starts).

Its objects are short-lived and acyclic: a batch's rows, freed with the batch. At Python's
threshold of 700 net allocations a young collection ran ~75 times per batch of 1,024 deliveries,
each walking the batch's rows still alive, and freed ~1 object each: ~10 µs of CPU a delivery,
~12 % of the evaluator's event loop (docs/performance.md). At 50,000 none of that is walked;
cyclic garbage, which the evaluator makes little of, waits up to 50,000 net allocations (a few
MB) before it is freed. What lasts the process's life is frozen after its warm-up instead
(`gc.freeze`, in the consumer).

The serving processes keep Python's thresholds: there the same change removed ~5 µs of
collections a request, but a young collection, when one ran, paused every request in flight for
~15 ms instead of ~0.25 ms, and the grid could not tell the two apart (docs/performance.md)."""

from __future__ import annotations

import gc

GC_THRESHOLDS = (50_000, 10, 10)  # Python's: (700, 10, 10)


def collect_less_often() -> None:
    """This process's cyclic collector runs at GC_THRESHOLDS."""
    gc.set_threshold(*GC_THRESHOLDS)
