"""What this process counted, in plain ints: the request path pays a dict or list increment
(~0.1 µs), not a prometheus_client call (~1.7 µs a counter, ~3.5 µs a histogram observation in
multiprocess mode, measured here). `gateway.metrics.export` hands the increments over."""

from __future__ import annotations

from bisect import bisect_left
from typing import Protocol

# upper bounds (seconds) of the ingress latency histogram's buckets; +Inf follows
LATENCY_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Latency:
    """A histogram of request durations: one count per bucket (the last is +Inf) and the sum."""

    __slots__ = ("buckets", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BOUNDS) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect_left(LATENCY_BOUNDS, seconds)] += 1
        self.total += seconds


class Evaluator(Protocol):
    """The delivery consumer's own counters (gateway/worker/delivery_consumer.py)."""

    processed: int
    runs_started: int


class ProcessCounts:
    """Everything one process counts; one instance per process (COUNTS)."""

    def __init__(self) -> None:
        self.deliveries: dict[str, int] = {}  # outcome -> count (docs/operations.md)
        self.responses: dict[int, int] = {}  # ingress HTTP status -> count
        self.latency = Latency()  # ingress requests, from the endpoint's first line to the last
        self.runner_claims: dict[str, int] = {}  # "claimed" runs, "empty" claim answers
        self.evaluators: list[Evaluator] = []  # read when exported

    def delivery(self, outcome: str) -> None:
        self.deliveries[outcome] = self.deliveries.get(outcome, 0) + 1

    def response(self, status: int, seconds: float) -> None:
        self.responses[status] = self.responses.get(status, 0) + 1
        self.latency.observe(seconds)

    def claims(self, result: str, count: int = 1) -> None:
        self.runner_claims[result] = self.runner_claims.get(result, 0) + count


COUNTS = ProcessCounts()
