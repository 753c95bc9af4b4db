"""Factory metrics and costs (spec 4.6): /factory/{uid}/metrics and /factory/{uid}/costs/...
What each number means: docs/metrics.md."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Query, Routes
from gateway.errors import Forbidden, NotFound
from gateway.platform.analytics import costs as factory_costs
from gateway.platform.analytics import metrics as factory_metrics
from gateway.platform.analytics.costs import CostGroupBy
from gateway.platform.analytics.params import (
    ERRORS,
    RATE_LIMITED,
    RATE_LIMITED_TYPE,
    Envelope,
    MetricsRange,
    PlainRange,
    metered_factory,
    range_of,
    refuse_binning,
)
from gateway.platform.analytics.queries import envelope

Rate = Annotated[float, Meta(ge=0, le=1)]
Dollars = Annotated[float, Meta(description="US dollars")]
PR_STATE = Literal["open", "closed", "merged"]


class Autonomy(Struct, kw_only=True):
    autonomous_run_count: Annotated[
        int, Meta(description="runs no person started (automations, agent keys)")
    ]
    rate: Annotated[Rate, Meta(description="autonomous_run_count / run_count")] | None


class Impact(Struct, kw_only=True):
    merged_pr_count: int
    open_pr_count: int
    closed_pr_count: int
    merge_rate: Annotated[Rate, Meta(description="merged_pr_count / pr_count")] | None


class PrLatency(Struct, kw_only=True):
    mean_seconds: Annotated[float, Meta(description="root run created -> PR first seen")] | None
    max_seconds: float | None


class MetricsSeries(Struct, kw_only=True):
    run_count: list[int]
    autonomous_run_count: list[int]
    pr_count: list[int]
    merged_pr_count: list[int]
    mean_pr_latency_seconds: list[float | None]


class FactoryMetricsResponse(Envelope, kw_only=True):
    run_count: Annotated[int, Meta(description="runs created in the range")]
    pr_count: Annotated[int, Meta(description="PRs (distinct URLs) first seen in the range")]
    autonomy: Autonomy
    impact: Impact
    pr_latency: PrLatency
    series: Annotated[MetricsSeries, Meta(description="with group_by_period")] | UnsetType = UNSET


class ComponentCost(Struct, kw_only=True):
    component: str
    total_cost_usd: Dollars
    mean_cost_usd: Dollars | None


class CostPerPrSeries(Struct, kw_only=True):
    pr_count: list[int]
    mean_cost_usd: list[float | None]


class FactoryCostPerPRResponse(Envelope, kw_only=True):
    pr_count: int
    total_cost_usd: Dollars
    mean_cost_usd: Annotated[Dollars, Meta(description="null without PRs")] | None
    components: list[ComponentCost]
    series: Annotated[CostPerPrSeries, Meta(description="with group_by_period")] | UnsetType = UNSET


class CostGroup(Struct, kw_only=True):
    key: Annotated[str, Meta(description="the entity's id or name; UNKNOWN when not named")]
    label: Annotated[str, Meta(description="user email, agent name, else the key")]
    cost_usd: Dollars
    input_tokens: int
    output_tokens: int
    cost_series: Annotated[list[float], Meta(description="with group_by_period")] | UnsetType = (
        UNSET
    )


class FactoryCostBreakdownResponse(Envelope, kw_only=True):
    group_by: CostGroupBy
    total_cost_usd: Dollars
    groups: Annotated[
        list[CostGroup], Meta(description="every entity with nonzero spend; UNKNOWN last")
    ]


class PrComponentCost(Struct, kw_only=True):
    component: str
    cost_usd: Dollars


class TopPr(Struct, kw_only=True):
    url: str
    title: str | None
    branch: str | None
    state: PR_STATE | None
    first_seen_at: Timestamp
    run_id: Annotated[str, Meta(description="the run whose artifact first named the PR")]
    root_run_id: Annotated[str, Meta(description="the run tree the cost is attributed from")]
    cost_usd: Dollars
    components: list[PrComponentCost]
    additions: Annotated[int, Meta(description="from code-forge webhooks; null before")] | None
    deletions: int | None
    changed_files: int | None
    merged_at: Timestamp | None


class FactoryTopPRsResponse(Envelope, kw_only=True):
    prs: Annotated[list[TopPr], Meta(description="most expensive first")]


class Breakdown(MetricsRange, kw_only=True):
    group_by: CostGroupBy


class TopQuery(PlainRange, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=50, description="default 20")] = 20


routes = Routes("factory metrics")
BASE = "/factory/{uid}"


@routes.get(
    f"{BASE}/metrics",
    "Factory metrics: runs, PRs, autonomy, impact, PR latency",
    response=FactoryMetricsResponse,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED,),
)
async def metrics_endpoint(request: Request, query: Query[MetricsRange]) -> Response:
    factory = await metered_factory(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    async with services_of(request).database.read() as conn:
        return json_response(await factory_metrics.factory_metrics(conn, factory.uid, w))


@routes.get(
    f"{BASE}/costs/per-pr",
    "Mean attributed cost per PR, per component",
    response=FactoryCostPerPRResponse,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED,),
)
async def cost_per_pr_endpoint(request: Request, query: Query[MetricsRange]) -> Response:
    factory = await metered_factory(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    async with services_of(request).database.read() as conn:
        return json_response(await factory_metrics.cost_per_pr(conn, factory.uid, w))


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
async def breakdown_endpoint(request: Request, query: Query[Breakdown]) -> Response:
    try:
        factory = await metered_factory(request)
    except Forbidden as exc:  # this operation answers 404 for a factory out of reach
        raise NotFound(exc.detail) from exc
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    async with services_of(request).database.read() as conn:
        found = await factory_costs.cost_breakdown(conn, factory.uid, w, params.group_by)
    return json_response(found)


@routes.get(
    f"{BASE}/costs/per-pr/top",
    "Costliest PRs first seen in the range",
    response=FactoryTopPRsResponse,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED, (400, "`invalid_request`; also for any group_by_period")),
)
async def top_prs_endpoint(request: Request, query: Query[TopQuery]) -> Response:
    factory = await metered_factory(request)
    refuse_binning(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date)
    async with services_of(request).database.read() as conn:
        prs = await factory_costs.top_prs(conn, factory.uid, w, params.limit)
    return json_response(envelope(factory.uid, w) | {"prs": prs})
