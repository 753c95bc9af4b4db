"""A factory's pull requests, its run counts by a dimension, and PR cost by PR size (spec 4.9;
paths and parameters decided in docs/api.md, meanings in docs/metrics.md)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Query, Routes
from gateway.platform.analytics import costs as factory_costs
from gateway.platform.analytics import pull_requests, run_counts
from gateway.platform.analytics.models import (
    FactoryPrCostBySizeResponse,
    FactoryRunCountsResponse,
    PlainRange,
    PullRequestList,
    PullRequestQuery,
    RunCountQuery,
)
from gateway.platform.analytics.params import (
    METERED,
    UNBINNED,
    metered_factory,
    metered_range,
    range_of,
    refuse_binning,
)

routes = Routes("factory metrics")
BASE = "/factory/{uid}"


@routes.get(
    f"{BASE}/pull-requests", "Pull requests of the factory's runs", response=PullRequestList
)
async def pull_requests_endpoint(
    request: Request, query: Query[PullRequestQuery]
) -> PullRequestList:
    principal = await principal_of(request)
    services = services_of(request)
    params = query.read()
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        scope = f"pull-requests:{factory.uid}"
        after = cursors_of(request).decode_keyset(scope, params.cursor)
        page = await pull_requests.list_pull_requests(
            conn, factory.uid, updated_after=params.updated_after, limit=params.limit, after=after
        )
    cursor = None
    if page.more:
        last = page.items[-1]
        cursor = cursors_of(request).encode_keyset(scope, last.first_seen_at, last.url)
    return PullRequestList(page.items, page_info(cursor))


@routes.get(
    f"{BASE}/metrics/run-counts",
    "Run counts grouped by state, source, user or agent",
    response=FactoryRunCountsResponse,
    **METERED,
)
async def run_counts_endpoint(
    request: Request, query: Query[RunCountQuery]
) -> FactoryRunCountsResponse:
    factory, params, w = await metered_range(request, query)
    async with services_of(request).database.read() as conn:
        return await run_counts.run_counts(conn, factory.uid, w, params.group_by)


@routes.get(
    f"{BASE}/costs/per-pr/by-size",
    "PR cost distribution by PR size",
    response=FactoryPrCostBySizeResponse,
    **UNBINNED,
)
async def cost_by_size_endpoint(
    request: Request, query: Query[PlainRange]
) -> FactoryPrCostBySizeResponse:
    factory = await metered_factory(request)
    refuse_binning(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date)
    async with services_of(request).database.read() as conn:
        return await factory_costs.cost_by_size(conn, factory.uid, w)
