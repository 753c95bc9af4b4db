"""Factory metrics and costs (spec 4.6): /factory/{uid}/metrics and /factory/{uid}/costs/...
What each number means: docs/metrics.md."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import services_of
from gateway.foundation.api.routing import Query, Routes
from gateway.kernel.errors import Forbidden, NotFound
from gateway.platform.analytics import costs as factory_costs
from gateway.platform.analytics import metrics as factory_metrics
from gateway.platform.analytics.models import (
    Breakdown,
    FactoryCostBreakdownResponse,
    FactoryCostPerPRResponse,
    FactoryMetricsResponse,
    FactoryTopPRsResponse,
    MetricsRange,
    TopQuery,
    envelope,
)
from gateway.platform.analytics.params import (
    METERED,
    RATE_LIMITED,
    RATE_LIMITED_TYPE,
    UNBINNED,
    metered_factory,
    metered_range,
    range_of,
    refuse_binning,
)

routes = Routes("factory metrics")
BASE = "/factory/{uid}"


@routes.get(
    f"{BASE}/metrics",
    "Factory metrics: runs, PRs, autonomy, impact, PR latency",
    response=FactoryMetricsResponse,
    **METERED,
)
async def metrics_endpoint(request: Request, query: Query[MetricsRange]) -> FactoryMetricsResponse:
    factory, _, w = await metered_range(request, query)
    async with services_of(request).database.read() as conn:
        return await factory_metrics.factory_metrics(conn, factory.uid, w)


@routes.get(
    f"{BASE}/costs/per-pr",
    "Mean attributed cost per PR, per component",
    response=FactoryCostPerPRResponse,
    **METERED,
)
async def cost_per_pr_endpoint(
    request: Request, query: Query[MetricsRange]
) -> FactoryCostPerPRResponse:
    factory, _, w = await metered_range(request, query)
    async with services_of(request).database.read() as conn:
        return await factory_metrics.cost_per_pr(conn, factory.uid, w)


@routes.get(
    f"{BASE}/costs/breakdown",
    "Spend per source, user, agent or model",
    response=FactoryCostBreakdownResponse,
    errors=(400, 401, 404, 429),
    problem_types=RATE_LIMITED_TYPE,
    problems=(
        RATE_LIMITED,
        (404, "`not_found`: no such factory, or not one of the caller's teams"),
    ),
)
async def breakdown_endpoint(
    request: Request, query: Query[Breakdown]
) -> FactoryCostBreakdownResponse:
    try:
        factory = await metered_factory(request)
    except Forbidden as exc:  # this operation answers 404 for a factory out of reach
        raise NotFound(exc.detail) from exc
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    async with services_of(request).database.read() as conn:
        return await factory_costs.cost_breakdown(conn, factory.uid, w, params.group_by)


@routes.get(
    f"{BASE}/costs/per-pr/top",
    "Costliest PRs first seen in the range",
    response=FactoryTopPRsResponse,
    **UNBINNED,
)
async def top_prs_endpoint(request: Request, query: Query[TopQuery]) -> FactoryTopPRsResponse:
    factory = await metered_factory(request)
    refuse_binning(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date)
    async with services_of(request).database.read() as conn:
        prs = await factory_costs.top_prs(conn, factory.uid, w, params.limit)
    return FactoryTopPRsResponse(**envelope(factory.uid, w), prs=prs)
