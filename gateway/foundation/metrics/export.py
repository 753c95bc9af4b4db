"""Hands this process's plain counts (gateway.foundation.metrics.counts) to prometheus_client, and
renders the exposition a scrape of /metrics answers.

One process (no PROMETHEUS_MULTIPROC_DIR): the metrics live in this process and a scrape shows
them. Several (`gateway serve --workers N`, its evaluator child, a `gateway worker` on the same
host): `gateway serve` points PROMETHEUS_MULTIPROC_DIR at a directory before any of them starts,
prometheus_client keeps each process's values in a memory-mapped file there, and a scrape, in
whichever worker answers it, adds up every file (docs/operations.md, "Metrics"). Each process
hands its counts over every FLUSH_S and when it stops, so a scrape may miss up to FLUSH_S of the
other processes' counts; the answering process hands over its own first.

Gauges (evaluator backlog and lag) are not counted anywhere: a scrape asks the store or Redis
for them (`Gauges`), so they are right whichever process answers and whatever died.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from functools import cache
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from gateway.foundation.metrics.counts import COUNTS, LATENCY_BOUNDS, OUTCOMES, ProcessCounts
from gateway.foundation.metrics.directory import MULTIPROC_ENV
from gateway.kernel.event_waits import pause

FLUSH_S = 1.0
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (gauge name, help); values come from GaugeReader
GAUGES = {
    "gateway_evaluator_backlog": "Accepted deliveries waiting for the evaluator",
    "gateway_evaluator_lag_seconds": "Age of the oldest accepted delivery not evaluated yet "
    "(0 when none waits)",
    "gateway_outbound_backlog": "Outbound messages (replies, events) not delivered nor failed yet",
}
GaugeReader = Callable[[], Awaitable[dict[str, float]]]


class Exporter:
    """The prometheus_client metrics of this process and what was handed to them so far."""

    def __init__(self, counts: ProcessCounts) -> None:
        # a `_created` sample per counter, as one process shows them, would differ from what
        # the multiprocess files show (none): left out everywhere
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.counts = counts
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.deliveries = Counter(
            "gateway_ingress_deliveries",
            "Deliveries by outcome: accepted, duplicate, a rejection reason code, not_found, "
            "unavailable",
            ["outcome"],
            registry=r,
        )
        self.responses = Counter(
            "gateway_ingress_responses", "Ingress answers by HTTP status", ["status"], registry=r
        )
        self.latency = Histogram(
            "gateway_ingress_request_duration_seconds",
            "Ingress request duration, body read to answer sent",
            buckets=LATENCY_BOUNDS,
            registry=r,
        )
        self.evaluated = Counter(
            "gateway_evaluator_deliveries", "Accepted deliveries evaluated", registry=r
        )
        self.runs = Counter(
            "gateway_evaluator_runs_created", "Runs started by matching automations", registry=r
        )
        self.claims = Counter(
            "gateway_runner_claims",
            "Runner claims: runs handed to runners (claimed) and claims answered with none (empty)",
            ["result"],
            registry=r,
        )
        self.outbound_attempts = Counter(
            "gateway_outbound_attempts",
            "Outbound sends (replies to providers, events) by kind and result: delivered, "
            "retry, failed",
            ["kind", "result"],
            registry=r,
        )
        self.outbound_messages = Counter(
            "gateway_outbound_messages",
            "Outbound messages settled for good, by kind and state: delivered, failed",
            ["kind", "state"],
            registry=r,
        )
        # every known label value shown from the start (at 0), so a dashboard has a series to
        # draw before the first rejection of a kind
        for outcome in OUTCOMES:
            self.deliveries.labels(outcome)
        for result in ("claimed", "empty"):
            self.claims.labels(result)
        self._handed: dict[str, dict[object, float]] = {}
        self._latency_handed = [0] * (len(LATENCY_BOUNDS) + 1)
        self._latency_sum_handed = 0.0

    def flush(self) -> None:
        """Hand the counts since the last flush to prometheus_client (deltas only)."""
        c = self.counts
        self._counter(self.deliveries, "deliveries", c.deliveries)
        self._counter(self.responses, "responses", c.responses)
        self._counter(self.claims, "claims", c.runner_claims)
        self._counter(self.outbound_attempts, "outbound_attempts", c.outbound_attempts)
        self._counter(self.outbound_messages, "outbound_messages", c.outbound_messages)
        evaluated, runs = c.evaluated()
        self._counter(self.evaluated, "evaluated", {(): evaluated})
        self._counter(self.runs, "runs", {(): runs})
        self._histogram()

    def _counter(self, counter: Counter, key: str, values: Mapping[Any, int]) -> None:
        handed = self._handed.setdefault(key, {})
        for label, value in list(values.items()):
            delta = value - handed.get(label, 0)
            if delta > 0:
                if label == ():
                    child = counter
                elif isinstance(label, tuple):
                    child = counter.labels(*label)
                else:
                    child = counter.labels(str(label))
                child.inc(delta)
                handed[label] = value

    def _histogram(self) -> None:
        latency = self.counts.latency
        # prometheus_client has no public call that adds n observations to a bucket: its own
        # per-bucket values (non-cumulative, the layout Latency keeps) are incremented instead.
        # tests/metrics checks the exposition, so a change of these internals shows there.
        buckets = self.latency._buckets
        for i, count in enumerate(latency.buckets):
            delta = count - self._latency_handed[i]
            if delta:
                buckets[i].inc(delta)
                self._latency_handed[i] = count
        total = latency.total - self._latency_sum_handed
        if total:
            self.latency._sum.inc(total)
            self._latency_sum_handed = latency.total


@cache
def exporter() -> Exporter:
    """The process's one Exporter (prometheus_client keeps one value per metric and process)."""
    return Exporter(COUNTS)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


async def flush_forever(interval: float = FLUSH_S) -> None:
    """Hand counts over every `interval` while the process runs, and once more when stopped."""
    try:
        while True:
            await pause(interval)
            exporter().flush()
    finally:
        exporter().flush()


class _Gauges:
    """A collector for gauge values read before the scrape renders."""

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def collect(self) -> Iterator[Metric]:
        for name, value in self.values.items():
            yield GaugeMetricFamily(name, GAUGES[name], value=value)


def render(gauges: dict[str, float]) -> bytes:
    """The exposition text: every process's counters (or this one's), then `gauges`."""
    own = exporter()
    own.flush()
    directory = multiprocess_dir()
    if directory is None:
        counted = generate_latest(own.registry)
    else:
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=directory)  # type: ignore[no-untyped-call]
        counted = generate_latest(merged)
    extra = CollectorRegistry()
    extra.register(_Gauges(gauges))
    return counted + generate_latest(extra)
