"""GET /factory/{uid}/costs/breakdown, /costs/per-pr/top and /costs/per-pr/by-size: where a
factory's spend went, its costliest PRs, and PR cost by PR size (docs/metrics.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.analytics.queries import (
    UNKNOWN,
    envelope,
    factory_prs,
    factory_spend,
    grouped,
    money,
    p,
    u,
)
from gateway.platform.analytics.run_groups import labels, ordered, usage_dimension
from gateway.platform.analytics.window import Window
from gateway.store import tables as t

CostGroupBy = Literal["source", "user", "agent", "model"]
SIZE_BUCKETS = (("XS", 10), ("S", 50), ("M", 250), ("L", 1000))  # lines changed, below
LARGEST = "XL"


async def cost_breakdown(
    conn: AsyncConnection, factory_uid: str, w: Window, group_by: CostGroupBy
) -> dict[str, Any]:
    """Spend of the window's runs per entity; every entity with nonzero spend, UNKNOWN last."""
    key = usage_dimension(group_by).label("key")
    query = select(
        key,
        func.sum(u.c.cost_usd).label("cost"),
        func.sum(u.c.input_tokens).label("input_tokens"),
        func.sum(u.c.output_tokens).label("output_tokens"),
    ).where(*factory_spend(factory_uid, w))
    rows = await grouped(conn, query, u.c.run_created_at, w, keys=[key])
    groups: dict[str, dict[str, Any]] = {}
    periods: dict[str, dict[str, float]] = defaultdict(dict)
    for row in rows:
        name = row.key or UNKNOWN
        group = groups.setdefault(name, {"cost": 0.0, "input_tokens": 0, "output_tokens": 0})
        group["cost"] += float(row.cost or 0)
        group["input_tokens"] += int(row.input_tokens or 0)
        group["output_tokens"] += int(row.output_tokens or 0)
        periods[name][row.period] = periods[name].get(row.period, 0.0) + float(row.cost or 0)
    spent = {name: group for name, group in groups.items() if money(group["cost"])}
    named = await labels(conn, group_by, list(spent))
    items = []
    for name in ordered(spent, lambda n: spent[n]["cost"]):
        group = spent[name]
        item: dict[str, Any] = {
            "key": name,
            "label": named.get(name, name),
            "cost_usd": money(group["cost"]),
            "input_tokens": group["input_tokens"],
            "output_tokens": group["output_tokens"],
        }
        if w.period is not None:
            item["cost_series"] = [money(v) for v in w.series(periods[name])]
        items.append(item)
    total = money(sum(group["cost"] for group in spent.values()))
    return envelope(factory_uid, w) | {
        "group_by": group_by,
        "total_cost_usd": total,
        "groups": items,
    }


async def top_prs(conn: AsyncConnection, factory_uid: str, w: Window, limit: int) -> list[Any]:
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
    return [_pr_item(row, components[row.url]) for row in rows]


def _pr_item(row: Any, components: dict[str, float]) -> dict[str, Any]:
    return {
        "url": row.url,
        "title": row.title,
        "branch": row.branch,
        "state": row.state,
        "first_seen_at": row.first_seen_at,
        "run_id": row.run_id,
        "root_run_id": row.root_run_id,
        "cost_usd": money(row.cost_usd),
        "components": [
            {"component": name, "cost_usd": money(cost)}
            for name, cost in sorted(components.items(), key=lambda item: (-item[1], item[0]))
            if money(cost)
        ],
        "additions": row.additions,
        "deletions": row.deletions,
        "changed_files": row.changed_files,
        "merged_at": row.merged_at,
    }


def size_bucket(lines: Any) -> Any:
    """XS < 10 lines changed (additions + deletions) <= S < 50 <= M < 250 <= L < 1000 <= XL."""
    whens = [(lines.is_(None), UNKNOWN), *((lines < bound, name) for name, bound in SIZE_BUCKETS)]
    return case(*whens, else_=LARGEST)


async def cost_by_size(conn: AsyncConnection, factory_uid: str, w: Window) -> dict[str, Any]:
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
    names = [name for name, _ in SIZE_BUCKETS] + [LARGEST, UNKNOWN]
    return envelope(factory_uid, w) | {
        "buckets": [_bucket(name, found.get(name)) for name in names]
    }


def _bucket(name: str, row: Any) -> dict[str, Any]:
    bounds = dict(SIZE_BUCKETS)
    lower = {"XS": 0, "S": 10, "M": 50, "L": 250, LARGEST: 1000}.get(name)
    count = int(row.prs) if row is not None else 0
    return {
        "size": name,
        "min_lines": lower,
        "max_lines": bounds[name] - 1 if name in bounds else None,
        "pr_count": count,
        "total_cost_usd": money(row.total) if count else 0.0,
        "mean_cost_usd": money(float(row.total) / count) if count else None,
        "min_cost_usd": money(row.least) if count else None,
        "max_cost_usd": money(row.most) if count else None,
    }
