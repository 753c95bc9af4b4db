"""GET /metrics: Prometheus exposition, outside /api/v1 and without credentials like /healthz
(docs/operations.md, "Metrics"). Counters come from every process of this server; the
evaluator's backlog and lag are read from the store or Redis at scrape time."""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import services_of
from gateway.foundation.api.routing import Routes, documented
from gateway.foundation.metrics import export

log = logging.getLogger("gateway")
GAUGE_TIMEOUT_S = 2.0  # a scrape still answers (without the gauges) when the store is slow

routes = Routes("health")


@routes.get(
    "/metrics",
    "Prometheus metrics",
    response=str,
    media_type="text/plain",  # answered with the exposition format's version parameter
    errors=(),
    public=True,
    notes="Prometheus text exposition: deliveries by outcome (each rejection reason), ingress "
    "answers by status and their latency, evaluator backlog, lag, evaluated deliveries and "
    "runs created, runner claims; counted across every process of this server "
    "(docs/operations.md).",
)
async def metrics_endpoint(request: Request) -> Response:
    read = services_of(request).gauges
    gauges: dict[str, float] = {}
    if read is not None:
        try:
            gauges = await asyncio.wait_for(read(), GAUGE_TIMEOUT_S)
        except Exception as exc:  # unreachable or slow: the counters are still worth answering
            log.warning("metrics: evaluator gauges unavailable (%s)", type(exc).__name__)
    return Response(export.render(gauges), media_type=export.CONTENT_TYPE)


OPERATIONS = tuple(documented(routes))
