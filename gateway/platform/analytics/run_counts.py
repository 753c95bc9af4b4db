"""Run counts of a factory grouped by a dimension (spec 4.9; docs/metrics.md)."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.analytics.models import (
    FactoryRunCountsResponse,
    RunCountGroup,
    RunGroupBy,
    envelope,
)
from gateway.platform.analytics.queries import UNKNOWN, factory_runs, grouped, r
from gateway.platform.analytics.run_groups import labels, ordered, run_dimension
from gateway.platform.analytics.window import Window


async def run_counts(
    conn: AsyncConnection, factory_uid: str, w: Window, group_by: RunGroupBy
) -> FactoryRunCountsResponse:
    """The window's runs per entity, most runs first, UNKNOWN last."""
    key = run_dimension(group_by).label("key")
    query = select(key, func.count().label("runs")).where(*factory_runs(factory_uid, w))
    counts: dict[str, int] = defaultdict(int)
    periods: dict[str, dict[str, int]] = defaultdict(dict)
    for row in await grouped(conn, query, r.c.created_at, w, keys=[key]):
        name = row.key or UNKNOWN
        counts[name] += int(row.runs)
        periods[name][row.period] = int(row.runs)
    named = await labels(conn, group_by, list(counts))
    groups = []
    for name in ordered(counts, lambda n: counts[n]):
        group = RunCountGroup(key=name, label=named.get(name, name), run_count=counts[name])
        if w.period is not None:
            group.run_count_series = w.series(periods[name])
        groups.append(group)
    return FactoryRunCountsResponse(
        **envelope(factory_uid, w),
        group_by=group_by,
        run_count=sum(counts.values()),
        groups=groups,
    )
