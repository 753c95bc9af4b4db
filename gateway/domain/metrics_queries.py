"""Building blocks of the factory metrics queries: the factory's runs and PRs in a window,
the cost of run trees, and grouping by period (docs/metrics.md explains the attribution).

Every aggregate is computed by the database (GROUP BY); Python only arranges the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, Select, Subquery, func, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from gateway.domain.metrics_sql import period_key
from gateway.domain.metrics_window import Window
from gateway.store import tables as t

r, u, p = t.runs, t.run_usage, t.pull_requests
UNKNOWN = "UNKNOWN"  # the group of records that do not name the grouped entity


def in_window(column: Any, w: Window) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    return column >= w.start, column < w.end


def factory_runs(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The runs a factory metric counts: the factory's, created in the window."""
    return (r.c.factory_uid == factory_uid, *in_window(r.c.created_at, w))


# Subqueries, not CTEs: PostgreSQL materialises a CTE used twice and then plans the joins on
# it blind (it assumed 200 trees for 400,000 PRs, and a plan that ran for minutes).


def factory_spend(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The usage a factory metric counts: of the factory's runs created in the window."""
    return (u.c.factory_uid == factory_uid, *in_window(u.c.run_created_at, w))


def prs_in_window(factory_uid: str, w: Window) -> Subquery:
    """The factory's PRs whose first appearance falls in the window (the columns the index
    holds, so PostgreSQL reads no table rows)."""
    where = (p.c.factory_uid == factory_uid, *in_window(p.c.first_seen_at, w))
    columns = [p.c[name] for name in ("first_seen_at", *t.PR_FIGURES)]
    return select(*columns).where(*where).subquery("prs")


def tree_shares(prs: Subquery) -> Subquery:
    """How many PRs (ever) each run tree of `prs` produced: its cost is split evenly among them."""
    roots = select(prs.c.root_run_id)
    query = select(p.c.root_run_id, func.count().label("prs"))
    return query.where(p.c.root_run_id.in_(roots)).group_by(p.c.root_run_id).subquery("shares")


def tree_costs(prs: Subquery, *, by_component: bool) -> Subquery:
    """Reported spend of each run tree of `prs` (per cost component when asked)."""
    columns: list[Any] = [u.c.root_run_id]
    if by_component:
        columns.append(u.c.component)
    query = (
        select(*columns, func.sum(u.c.cost_usd).label("cost"))
        .where(u.c.root_run_id.in_(select(prs.c.root_run_id)))
        .group_by(*columns)
    )
    return query.subquery("tree_costs_by_component" if by_component else "tree_costs")


def attributed(prs: Subquery) -> tuple[Any, ColumnElement[Any]]:
    """(FROM clause, each PR's attributed cost): its tree's spend over the tree's PR count."""
    shares, costs = tree_shares(prs), tree_costs(prs, by_component=False)
    joined = prs.join(shares, shares.c.root_run_id == prs.c.root_run_id).outerjoin(
        costs, costs.c.root_run_id == prs.c.root_run_id
    )
    return joined, func.coalesce(costs.c.cost, 0.0) / shares.c.prs


async def grouped(
    conn: AsyncConnection,
    query: Select[Any],
    moment: Any,
    w: Window,
    keys: Sequence[Any] = (),
) -> list[Row[Any]]:
    """`query` grouped by `keys` and, with a period, by the period of `moment` (column
    `period`; '' without a period)."""
    if w.period is None:
        period: Any = literal("").label("period")
        query = query.add_columns(period)
        if keys:
            query = query.group_by(*keys)
    else:
        period = period_key(moment, w.period, conn.dialect.name).label("period")
        query = query.add_columns(period).group_by(*keys, period)
    return list((await conn.execute(query)).all())


def money(value: Any) -> float:
    return round(float(value or 0.0), 6)


def ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None


def envelope(factory_uid: str, w: Window) -> dict[str, Any]:
    """What every metrics answer starts with: the range and binning it covers."""
    body: dict[str, Any] = {
        "factory_uid": factory_uid,
        "start_date": w.start,
        "end_date": w.end,
        "group_by_period": w.period,
    }
    if w.period is not None:
        body["period_list"] = list(w.periods)
    return body
