"""GET /factory/{uid}/metrics and /costs/per-pr (spec 4.6): counts and costs of a factory's
runs and pull requests over a window (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import UNSET
from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.analytics.dialect_sql import seconds_between
from gateway.platform.analytics.models import (
    Autonomy,
    ComponentCost,
    CostPerPrSeries,
    FactoryCostPerPRResponse,
    FactoryMetricsResponse,
    Impact,
    MetricsSeries,
    PrLatency,
    envelope,
)
from gateway.platform.analytics.queries import (
    Grouped,
    factory_pr_costs,
    factory_prs,
    factory_runs,
    grouped,
    money,
    p,
    r,
    ratio,
)
from gateway.platform.analytics.window import Window


def _flag(condition: Any) -> Any:
    return func.sum(case((condition, 1), else_=0))


async def factory_metrics(
    conn: AsyncConnection, factory_uid: str, w: Window
) -> FactoryMetricsResponse:
    """Runs (and those no person started: autonomy), PRs (and their states: impact), and the
    time from a PR's root run to the PR (latency)."""
    runs_query = select(
        func.count().label("runs"), _flag(r.c.creator_kind.is_distinct_from("user")).label("auto")
    ).where(*factory_runs(factory_uid, w))
    runs = {row.period: row for row in await grouped(conn, runs_query, r.c.created_at, w)}
    latency = seconds_between(p.c.first_seen_at, p.c.root_created_at, conn.dialect.name)
    prs_query = select(
        func.count().label("prs"),
        _flag(p.c.state == "merged").label("merged"),
        _flag(p.c.state == "open").label("open"),
        _flag(p.c.state == "closed").label("closed"),
        func.sum(latency).label("latency"),
        func.max(latency).label("max_latency"),
    ).where(*factory_prs(factory_uid, w))
    prs = {row.period: row for row in await grouped(conn, prs_query, p.c.first_seen_at, w)}
    run_count, autonomous = _sum(runs.values(), "runs"), _sum(runs.values(), "auto")
    pr_count, merged = _sum(prs.values(), "prs"), _sum(prs.values(), "merged")
    return FactoryMetricsResponse(
        **envelope(factory_uid, w),
        run_count=run_count,
        pr_count=pr_count,
        autonomy=Autonomy(autonomous_run_count=autonomous, rate=ratio(autonomous, run_count)),
        impact=Impact(
            merged_pr_count=merged,
            open_pr_count=_sum(prs.values(), "open"),
            closed_pr_count=_sum(prs.values(), "closed"),
            merge_rate=ratio(merged, pr_count),
        ),
        pr_latency=_latency(list(prs.values()), pr_count),
        series=UNSET if w.period is None else _series(w, runs, prs),
    )


def _sum(rows: Iterable[Grouped], name: str) -> int:
    return sum(int(getattr(row, name) or 0) for row in rows)


def _latency(prs: list[Grouped], pr_count: int) -> PrLatency:
    latencies = [row.max_latency for row in prs if row.max_latency is not None]
    latency_sum = sum(float(row.latency or 0) for row in prs)
    return PrLatency(
        mean_seconds=round(latency_sum / pr_count, 3) if pr_count else None,
        max_seconds=round(max(latencies), 3) if latencies else None,
    )


def _series(w: Window, runs: dict[str, Grouped], prs: dict[str, Grouped]) -> MetricsSeries:
    def each(rows: dict[str, Grouped], name: str) -> list[int]:
        return w.series({key: int(getattr(row, name) or 0) for key, row in rows.items()})

    latency = {
        key: round(float(row.latency) / row.prs, 3)
        for key, row in prs.items()
        if row.prs and row.latency is not None
    }
    return MetricsSeries(
        run_count=each(runs, "runs"),
        autonomous_run_count=each(runs, "auto"),
        pr_count=each(prs, "prs"),
        merged_pr_count=each(prs, "merged"),
        mean_pr_latency_seconds=[latency.get(key) for key in w.periods],
    )


async def cost_per_pr(
    conn: AsyncConnection, factory_uid: str, w: Window
) -> FactoryCostPerPRResponse:
    """Mean attributed cost of the PRs first seen in the window, in all and per component."""
    totals = select(func.count().label("prs"), func.sum(p.c.cost_usd).label("cost")).where(
        *factory_prs(factory_uid, w)
    )
    per_period = {row.period: row for row in await grouped(conn, totals, p.c.first_seen_at, w)}
    pc = t.pr_costs
    by_component = select(pc.c.component, func.sum(pc.c.cost_usd).label("cost"))
    by_component = by_component.where(*factory_pr_costs(factory_uid, w)).group_by(pc.c.component)
    components = {row.component: float(row.cost or 0) for row in await conn.execute(by_component)}
    pr_count = sum(int(row.prs) for row in per_period.values())
    total = sum(float(row.cost or 0) for row in per_period.values())
    return FactoryCostPerPRResponse(
        **envelope(factory_uid, w),
        pr_count=pr_count,
        total_cost_usd=money(total),
        mean_cost_usd=money(total / pr_count) if pr_count else None,
        components=[
            ComponentCost(
                component=name,
                total_cost_usd=money(cost),
                mean_cost_usd=money(cost / pr_count) if pr_count else None,
            )
            for name, cost in sorted(components.items(), key=lambda item: (-item[1], item[0]))
            if money(cost)
        ],
        series=UNSET if w.period is None else _cost_series(w, per_period),
    )


def _cost_series(w: Window, per_period: dict[str, Grouped]) -> CostPerPrSeries:
    counts = {key: int(row.prs) for key, row in per_period.items()}
    return CostPerPrSeries(
        pr_count=w.series(counts),
        mean_cost_usd=[
            money(float(per_period[key].cost or 0) / counts[key]) if counts.get(key) else None
            for key in w.periods
        ],
    )
