"""The shapes of factory metrics: the range a caller asks for, and every answer (its envelope,
the range and binning it covers, first). The API decodes requests into them, the rules return
them, and the OpenAPI document is made from them. What each number means: docs/metrics.md."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal, TypedDict

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Cursor, Limit, Moment, Timestamp, in_utc
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.store.rows import from_row
from gateway.platform.analytics.window import Period, Window

Rate = Annotated[float, Meta(ge=0, le=1)]
Dollars = Annotated[float, Meta(description="US dollars")]
PrState = Literal["open", "closed", "merged"]
CostGroupBy = Literal["source", "user", "agent", "model"]
RunGroupBy = Literal["state", "source", "user", "agent"]
SizeName = Literal["XS", "S", "M", "L", "XL", "UNKNOWN"]


# --- the range asked for -----------------------------------------------------------------------

Start = Annotated[Moment, Meta(description="inclusive; default end_date minus 30 days")]
End = Annotated[Moment, Meta(description="exclusive; default now")]
Binning = Annotated[
    Period,
    Meta(description="adds per-period series aligned to period_list (UTC; weeks from Monday)"),
]


class PlainRange(Struct, kw_only=True):
    """The range of an endpoint without binning."""

    start_date: Start | None = None
    end_date: End | None = None

    def __post_init__(self) -> None:
        self.start_date = in_utc(self.start_date, "start_date")
        self.end_date = in_utc(self.end_date, "end_date")


class MetricsRange(PlainRange, kw_only=True):
    group_by_period: Binning | None = None


class Breakdown(MetricsRange, kw_only=True):
    group_by: CostGroupBy


class TopQuery(PlainRange, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=50, description="default 20")] = 20


class RunCountQuery(MetricsRange, kw_only=True):
    group_by: RunGroupBy


class PullRequestQuery(Struct, kw_only=True):
    updated_after: (
        Annotated[Moment, Meta(description="only PRs changed after this (incremental sync)")] | None
    ) = None
    limit: Limit = 50
    cursor: Cursor | None = None

    def __post_init__(self) -> None:
        self.updated_after = in_utc(self.updated_after, "updated_after")


# --- the envelope of every answer --------------------------------------------------------------


class Envelope(Struct, kw_only=True):
    """The range and binning an answer covers."""

    factory_uid: str
    start_date: Timestamp
    end_date: Timestamp
    group_by_period: Period | None
    period_list: (
        Annotated[list[date], Meta(description="first day of each period, oldest first")]
        | UnsetType
    ) = UNSET


class EnvelopeFields(TypedDict):
    """The fields of `Envelope`, for an answer's constructor: `Answer(**envelope(...), ...)`."""

    factory_uid: str
    start_date: datetime
    end_date: datetime
    group_by_period: Period | None
    period_list: list[date] | UnsetType


def envelope(factory_uid: str, w: Window) -> EnvelopeFields:
    """What every metrics answer starts with: the range and binning it covers."""
    return {
        "factory_uid": factory_uid,
        "start_date": w.start,
        "end_date": w.end,
        "group_by_period": w.period,
        "period_list": UNSET if w.period is None else w.period_list(),
    }


# --- runs, PRs, autonomy, impact, latency ------------------------------------------------------


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


# --- costs -------------------------------------------------------------------------------------


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
    state: PrState | None
    first_seen_at: Timestamp
    run_id: Annotated[str, Meta(description="the run whose artifact first named the PR")]
    root_run_id: Annotated[str, Meta(description="the run tree the cost is attributed from")]
    cost_usd: Dollars
    components: list[PrComponentCost]
    additions: Annotated[int, Meta(description="from code-forge webhooks; null before")] | None
    deletions: int | None
    changed_files: int | None
    merged_at: Timestamp | None

    @classmethod
    def from_row(cls, row: Row[Any], cost_usd: float, components: list[PrComponentCost]) -> TopPr:
        return from_row(cls, row, cost_usd=cost_usd, components=components)


class FactoryTopPRsResponse(Envelope, kw_only=True):
    prs: Annotated[list[TopPr], Meta(description="most expensive first")]


class SizeBucket(Struct, kw_only=True):
    size: SizeName
    min_lines: Annotated[int, Meta(description="additions + deletions, inclusive")] | None
    max_lines: Annotated[int, Meta(description="inclusive; null: no upper bound")] | None
    pr_count: int
    total_cost_usd: Dollars
    mean_cost_usd: Dollars | None
    min_cost_usd: Dollars | None
    max_cost_usd: Dollars | None


class FactoryPrCostBySizeResponse(Envelope, kw_only=True):
    buckets: Annotated[list[SizeBucket], Meta(description="XS to XL, then UNKNOWN (no detail)")]


# --- run counts --------------------------------------------------------------------------------


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


# --- pull requests -----------------------------------------------------------------------------


class PullRequest(Struct, kw_only=True):
    url: str
    title: str | None
    branch: str | None
    state: PrState | None
    first_seen_at: Annotated[Timestamp, Meta(description="when a run first reported it")]
    updated_at: Annotated[Timestamp, Meta(description="last change of any field")]
    run_id: str
    root_run_id: str
    additions: Annotated[int, Meta(description="from code-forge webhooks; null before")] | None
    deletions: int | None
    changed_files: int | None
    merged_at: Timestamp | None

    @classmethod
    def from_row(cls, row: Row[Any]) -> PullRequest:
        return from_row(cls, row)


class PullRequestList(Struct):
    pull_requests: Annotated[list[PullRequest], Meta(description="newest first_seen_at first")]
    page_info: PageInfo
