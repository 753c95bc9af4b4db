"""GET /factory/{uid}/costs/breakdown, /costs/per-pr/top and /costs/per-pr/by-size: where a
factory's spend went, its costliest PRs, and PR cost by PR size (docs/metrics.md)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.analytics.models import (
    CostGroup,
    CostGroupBy,
    FactoryCostBreakdownResponse,
    FactoryPrCostBySizeResponse,
    PrComponentCost,
    SizeBucket,
    SizeName,
    TopPr,
    envelope,
)
from gateway.platform.analytics.queries import (
    UNKNOWN,
    factory_prs,
    factory_spend,
    grouped,
    money,
    p,
    u,
)
from gateway.platform.analytics.run_groups import labels, ordered, usage_dimension
from gateway.platform.analytics.window import Window

SIZE_BUCKETS = (("XS", 10), ("S", 50), ("M", 250), ("L", 1000))  # lines changed, below
LARGEST = "XL"
SIZES: tuple[SizeName, ...] = ("XS", "S", "M", "L", "XL", "UNKNOWN")  # as answers list them


@dataclass(slots=True)
class _Spend:
    """One entity's spend in the window."""

    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0


async def cost_breakdown(
    conn: AsyncConnection, factory_uid: str, w: Window, group_by: CostGroupBy
) -> FactoryCostBreakdownResponse:
    """Spend of the window's runs per entity; every entity with nonzero spend, UNKNOWN last."""
    key = usage_dimension(group_by).label("key")
    query = select(
        key,
        func.sum(u.c.cost_usd).label("cost"),
        func.sum(u.c.input_tokens).label("input_tokens"),
        func.sum(u.c.output_tokens).label("output_tokens"),
    ).where(*factory_spend(factory_uid, w))
    groups: dict[str, _Spend] = {}
    periods: dict[str, dict[str, float]] = defaultdict(dict)
    for row in await grouped(conn, query, u.c.run_created_at, w, keys=[key]):
        name = row.key or UNKNOWN
        group = groups.setdefault(name, _Spend())
        group.cost += float(row.cost or 0)
        group.input_tokens += int(row.input_tokens or 0)
        group.output_tokens += int(row.output_tokens or 0)
        periods[name][row.period] = periods[name].get(row.period, 0.0) + float(row.cost or 0)
    spent = {name: group for name, group in groups.items() if money(group.cost)}
    named = await labels(conn, group_by, list(spent))
    items = []
    for name in ordered(spent, lambda n: spent[n].cost):
        group = spent[name]
        item = CostGroup(
            key=name,
            label=named.get(name, name),
            cost_usd=money(group.cost),
            input_tokens=group.input_tokens,
            output_tokens=group.output_tokens,
        )
        if w.period is not None:
            item.cost_series = [money(v) for v in w.series(periods[name])]
        items.append(item)
    return FactoryCostBreakdownResponse(
        **envelope(factory_uid, w),
        group_by=group_by,
        total_cost_usd=money(sum(group.cost for group in spent.values())),
        groups=items,
    )


async def top_prs(conn: AsyncConnection, factory_uid: str, w: Window, limit: int) -> list[TopPr]:
    """The costliest PRs first seen in the window, most expensive first (then newest)."""
    # ranked from the index alone (url, cost and first appearance are in it), then read
    ranking = (
        select(p.c.url)
        .where(*factory_prs(factory_uid, w))
        .order_by(p.c.cost_usd.desc(), p.c.first_seen_at.desc(), p.c.url)
        .limit(limit)
    )
    ranked = list((await conn.execute(ranking)).scalars())
    found_prs = await conn.execute(select(p).where(p.c.url.in_(ranked)))
    rows = sorted(found_prs.all(), key=lambda row: ranked.index(row.url))
    pc = t.pr_costs
    found = await conn.execute(
        select(pc.c.url, pc.c.component, pc.c.cost_usd).where(
            pc.c.url.in_([row.url for row in rows])
        )
    )
    components: dict[str, dict[str, float]] = defaultdict(dict)
    for url, component, cost in found:
        components[url][component] = float(cost)
    return [_top_pr(row, components[row.url]) for row in rows]


def _top_pr(row: Row[Any], components: dict[str, float]) -> TopPr:
    costs = [
        PrComponentCost(component=name, cost_usd=money(cost))
        for name, cost in sorted(components.items(), key=lambda item: (-item[1], item[0]))
        if money(cost)
    ]
    return TopPr.from_row(row, money(row.cost_usd), costs)


def size_bucket(lines: Any) -> Any:
    """XS < 10 lines changed (additions + deletions) <= S < 50 <= M < 250 <= L < 1000 <= XL."""
    whens = [(lines.is_(None), UNKNOWN), *((lines < bound, name) for name, bound in SIZE_BUCKETS)]
    return case(*whens, else_=LARGEST)


async def cost_by_size(
    conn: AsyncConnection, factory_uid: str, w: Window
) -> FactoryPrCostBySizeResponse:
    """PRs first seen in the window grouped by size: count and attributed cost of each."""
    bucket = size_bucket(p.c.additions + p.c.deletions).label("bucket")
    cost = p.c.cost_usd
    query = (
        select(
            bucket,
            func.count().label("prs"),
            func.sum(cost).label("total"),
            func.min(cost).label("least"),
            func.max(cost).label("most"),
        )
        .where(*factory_prs(factory_uid, w))
        .group_by(bucket)
    )
    found = {row.bucket: row for row in await conn.execute(query)}
    return FactoryPrCostBySizeResponse(
        **envelope(factory_uid, w), buckets=[_bucket(name, found.get(name)) for name in SIZES]
    )


def _bucket(name: SizeName, row: Row[Any] | None) -> SizeBucket:
    bounds = dict(SIZE_BUCKETS)
    bucket = SizeBucket(
        size=name,
        min_lines={"XS": 0, "S": 10, "M": 50, "L": 250, LARGEST: 1000}.get(name),
        max_lines=bounds[name] - 1 if name in bounds else None,
        pr_count=0,
        total_cost_usd=0.0,
        mean_cost_usd=None,
        min_cost_usd=None,
        max_cost_usd=None,
    )
    if row is not None and row.prs:
        bucket.pr_count = int(row.prs)
        bucket.total_cost_usd = money(row.total)
        bucket.mean_cost_usd = money(float(row.total) / bucket.pr_count)
        bucket.min_cost_usd = money(row.least)
        bucket.max_cost_usd = money(row.most)
    return bucket
