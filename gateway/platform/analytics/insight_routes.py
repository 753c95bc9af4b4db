"""A factory's pull requests, its run counts by a dimension, and PR cost by PR size (spec 4.9;
paths and parameters decided in docs/api.md, meanings in docs/metrics.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Moment, Timestamp, in_utc
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Query, Routes
from gateway.platform.analytics import costs as factory_costs
from gateway.platform.analytics import pull_requests, run_counts
from gateway.platform.analytics.metrics_routes import PR_STATE, Dollars
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
from gateway.platform.analytics.run_counts import RunGroupBy


class PullRequest(Struct, kw_only=True):
    url: str
    title: str | None
    branch: str | None
    state: PR_STATE | None
    first_seen_at: Annotated[Timestamp, Meta(description="when a run first reported it")]
    updated_at: Annotated[Timestamp, Meta(description="last change of any field")]
    run_id: str
    root_run_id: str
    additions: Annotated[int, Meta(description="from code-forge webhooks; null before")] | None
    deletions: int | None
    changed_files: int | None
    merged_at: Timestamp | None


class PullRequestList(Struct):
    pull_requests: Annotated[list[PullRequest], Meta(description="newest first_seen_at first")]
    page_info: PageInfo


class PullRequestQuery(Struct, kw_only=True):
    updated_after: (
        Annotated[Moment, Meta(description="only PRs changed after this (incremental sync)")] | None
    ) = None
    limit: Limit = 50
    cursor: Cursor | None = None

    def __post_init__(self) -> None:
        self.updated_after = in_utc(self.updated_after, "updated_after")


class RunCountQuery(MetricsRange, kw_only=True):
    group_by: RunGroupBy


class RunCountGroup(Struct, kw_only=True):
    key: Annotated[str, Meta(description="state, source, user uid or agent uid; UNKNOWN last")]
    label: str
    run_count: int
    run_count_series: Annotated[list[int], Meta(description="with group_by_period")] | UnsetType = (
        UNSET
    )


class FactoryRunCountsResponse(Envelope, kw_only=True):
    group_by: RunGroupBy
    run_count: int
    groups: list[RunCountGroup]


class SizeBucket(Struct, kw_only=True):
    size: Literal["XS", "S", "M", "L", "XL", "UNKNOWN"]
    min_lines: Annotated[int, Meta(description="additions + deletions, inclusive")] | None
    max_lines: Annotated[int, Meta(description="inclusive; null: no upper bound")] | None
    pr_count: int
    total_cost_usd: Dollars
    mean_cost_usd: Dollars | None
    min_cost_usd: Dollars | None
    max_cost_usd: Dollars | None


class FactoryPrCostBySizeResponse(Envelope, kw_only=True):
    buckets: Annotated[list[SizeBucket], Meta(description="XS to XL, then UNKNOWN (no detail)")]


routes = Routes("factory metrics")
BASE = "/factory/{uid}"


@routes.get(
    f"{BASE}/pull-requests", "Pull requests of the factory's runs", response=PullRequestList
)
async def pull_requests_endpoint(request: Request, query: Query[PullRequestQuery]) -> Response:
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
    items = [_pull_request(row) for row in page.items]
    return json_response({"pull_requests": items, "page_info": page_info(cursor)})


def _pull_request(row: Any) -> dict[str, Any]:
    fields = ("url", "title", "branch", "state", "first_seen_at", "updated_at", "run_id")
    more = ("root_run_id", "additions", "deletions", "changed_files", "merged_at")
    return {name: getattr(row, name) for name in (*fields, *more)}


@routes.get(
    f"{BASE}/metrics/run-counts",
    "Run counts grouped by state, source, user or agent",
    response=FactoryRunCountsResponse,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED,),
)
async def run_counts_endpoint(request: Request, query: Query[RunCountQuery]) -> Response:
    factory = await metered_factory(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    async with services_of(request).database.read() as conn:
        return json_response(await run_counts.run_counts(conn, factory.uid, w, params.group_by))


@routes.get(
    f"{BASE}/costs/per-pr/by-size",
    "PR cost distribution by PR size",
    response=FactoryPrCostBySizeResponse,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED, (400, "`invalid_request`; also for any group_by_period")),
)
async def cost_by_size_endpoint(request: Request, query: Query[PlainRange]) -> Response:
    factory = await metered_factory(request)
    refuse_binning(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date)
    async with services_of(request).database.read() as conn:
        return json_response(await factory_costs.cost_by_size(conn, factory.uid, w))
