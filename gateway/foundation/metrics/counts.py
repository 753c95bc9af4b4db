"""What this process counted, in plain ints: the request path pays a dict or list increment
(~0.1 µs), not a prometheus_client call (~1.7 µs a counter, ~3.5 µs a histogram observation in
multiprocess mode, measured here). `gateway.foundation.metrics.export` hands the increments over."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from typing import Protocol

from gateway.kernel.rejections import Reason

# upper bounds (seconds) of the ingress latency histogram's buckets; +Inf follows
LATENCY_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# gateway_ingress_deliveries_total's outcomes: a 202 (accepted, duplicate), a refusal's reason,
# an unknown webhook (not_found), a configuration changing twice mid-request (unavailable)
OUTCOMES = ("accepted", "duplicate", *(r.value for r in Reason), "not_found", "unavailable")


class Latency:
    """A histogram of request durations: one count per bucket (the last is +Inf) and the sum."""

    __slots__ = ("buckets", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BOUNDS) + 1)
        self.total = 0.0


class Evaluator(Protocol):
    """The delivery consumer's own counters
    (gateway/webhook_gateway/evaluator/delivery_consumer.py)."""

    processed: int
    runs_started: int


class ProcessCounts:
    """Everything one process counts; one instance per process (COUNTS)."""

    def __init__(self) -> None:
        # outcome -> count (docs/operations.md); the request path bumps it in place:
        # `COUNTS.deliveries["accepted"] += 1` is one C-level dict update, no call
        self.deliveries: defaultdict[str, int] = defaultdict(int)
        self.responses: defaultdict[int, int] = defaultdict(int)  # ingress HTTP status -> count
        self.latency = Latency()  # ingress requests, from the endpoint's first line to the last
        self.runner_claims: defaultdict[str, int] = defaultdict(int)  # "claimed", "empty"
        self.evaluators: list[Evaluator] = []  # read when exported
        self.retired = (0, 0)  # (processed, runs started) of evaluators that have stopped
        # outbound messages (gateway/foundation/outbound): attempts by (kind, delivered | retry |
        # failed), messages settled for good by (kind, delivered | failed)
        self.outbound_attempts: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.outbound_messages: defaultdict[tuple[str, str], int] = defaultdict(int)

    def evaluated(self) -> tuple[int, int]:
        """(deliveries evaluated, runs started) by this process's evaluators so far."""
        processed, runs = self.retired
        for evaluator in self.evaluators:
            processed += evaluator.processed
            runs += evaluator.runs_started
        return processed, runs

    def retire(self, evaluator: Evaluator) -> None:
        """`evaluator` stopped: keep its totals, not the object."""
        if evaluator in self.evaluators:
            self.evaluators.remove(evaluator)
            processed, runs = self.retired
            self.retired = (processed + evaluator.processed, runs + evaluator.runs_started)

    def response(self, status: int, seconds: float) -> None:
        self.responses[status] += 1
        latency = self.latency
        latency.buckets[bisect_left(LATENCY_BOUNDS, seconds)] += 1
        latency.total += seconds


COUNTS = ProcessCounts()
