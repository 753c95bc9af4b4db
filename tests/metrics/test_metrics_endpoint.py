"""GET /metrics in one process, on the embedded and the Redis backend: what a scrape shows after
real deliveries (accepted, duplicate, rejected for a reason, refused for a full backlog), the
evaluator's backlog and lag read from the store or Redis, and the latency histogram as
prometheus_client renders it from the plain counts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import generate_latest

from gateway.foundation.metrics.counts import LATENCY_BOUNDS, ProcessCounts
from gateway.foundation.metrics.export import CONTENT_TYPE, Exporter
from gateway.kernel.settings import Settings
from tests.ingress.hooks import add_webhook
from tests.metrics.scrape import names, parse, value
from tests.support import GatewayClient, World

DELIVERIES = "gateway_ingress_deliveries_total"
# what the backlog holds after the requests below, and so where it is set full: two accepted
# deliveries; on Redis also the duplicate's and the 401's log entries, which wait in the streams
BACKLOG = {"embedded": 2, "redis": 4}


@pytest.fixture
def gw(shape: str, shape_settings: Callable[..., Settings]) -> Iterator[GatewayClient]:
    """Each supported shape: embedded on SQLite, Redis on PostgreSQL."""
    # evaluator off: what enters the backlog stays there
    settings = shape_settings(evaluator="off", max_backlog=str(BACKLOG[shape]))
    with GatewayClient.running(settings) as client:
        yield client


def _scrape(gw: GatewayClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = gw.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE
    return parse(response.text)


def test_a_scrape_counts_what_ingress_answered(
    gw: GatewayClient, caplog: pytest.LogCaptureFixture
) -> None:
    world = World.create(gw)
    hook = add_webhook(gw, world)
    before = _scrape(gw)
    headers = {**hook.auth, "X-Service-Delivery-Id": "one"}
    assert gw.post(hook.path, content=b"{}", headers=headers).status_code == 202
    assert gw.post(hook.path, content=b"{}", headers=headers).status_code == 202  # duplicate
    assert gw.post(hook.path, content=b"[]", headers=hook.auth).status_code == 202
    assert (
        gw.post(hook.path, content=b"{}", headers={"Authorization": "Bearer x"}).status_code == 401
    )
    with caplog.at_level(logging.INFO, logger="gateway.ingress"):
        full = gw.post(hook.path, content=b"[1]", headers=hook.auth)  # the backlog is full
    assert full.status_code == 503
    assert any("rejected: backlog_full" in r.getMessage() for r in caplog.records)
    assert gw.post("/webhooks/w/wh_unknown", content=b"{}").status_code == 404

    after = _scrape(gw)

    def added(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert added(DELIVERIES, outcome="accepted") == 2
    assert added(DELIVERIES, outcome="duplicate") == 1
    assert added(DELIVERIES, outcome="token_unknown") == 1
    assert added(DELIVERIES, outcome="backlog_full") == 1
    assert added(DELIVERIES, outcome="not_found") == 1
    assert added("gateway_ingress_responses_total", status="202") == 3
    assert added("gateway_ingress_responses_total", status="401") == 1
    assert added("gateway_ingress_responses_total", status="503") == 1
    assert added("gateway_ingress_request_duration_seconds_count") == 6
    assert added("gateway_ingress_request_duration_seconds_bucket", le="+Inf") == 6
    kind = "redis" if gw.services.settings.uses_redis else "embedded"
    assert value(after, "gateway_evaluator_backlog") == BACKLOG[kind]
    assert 0 <= value(after, "gateway_evaluator_lag_seconds") < 60
    # counters with no labels are shown from the start, at 0 while nothing ran
    assert {"gateway_evaluator_runs_created_total", "gateway_evaluator_deliveries_total"} <= names(
        after
    )


def test_the_histogram_is_handed_over_bucket_by_bucket() -> None:
    counts = ProcessCounts()
    exporter = Exporter(counts)
    for seconds in (0.0003, 0.0007, 0.0007, 0.3, 10.0):
        counts.response(202, seconds)
    exporter.flush()
    exporter.flush()  # nothing new: nothing added twice
    counts.response(401, 0.002)
    exporter.flush()
    samples = parse(generate_latest(exporter.registry).decode())
    name = "gateway_ingress_request_duration_seconds"
    cumulative = {str(b): value(samples, f"{name}_bucket", le=str(b)) for b in LATENCY_BOUNDS}
    assert cumulative["0.0005"] == 1
    assert cumulative["0.001"] == 3
    assert cumulative["0.0025"] == 4
    assert cumulative["0.25"] == 4
    assert cumulative["0.5"] == 5
    assert value(samples, f"{name}_bucket", le="+Inf") == 6
    assert value(samples, f"{name}_count") == 6
    assert value(samples, f"{name}_sum") == pytest.approx(10.3037)
    assert value(samples, "gateway_ingress_responses_total", status="202") == 5


class _Evaluator:
    def __init__(self) -> None:
        self.processed = 0
        self.runs_started = 0


def test_a_stopped_evaluator_keeps_its_counts() -> None:
    counts = ProcessCounts()
    exporter = Exporter(counts)
    first, second = _Evaluator(), _Evaluator()
    counts.evaluators += [first, second]
    first.processed, first.runs_started = 5, 2
    exporter.flush()
    counts.retire(first)
    second.processed, second.runs_started = 3, 1
    exporter.flush()
    samples = parse(generate_latest(exporter.registry).decode())
    assert value(samples, "gateway_evaluator_deliveries_total") == 8
    assert value(samples, "gateway_evaluator_runs_created_total") == 3
    assert counts.evaluators == [second]
