"""Building blocks of the factory metrics queries: the factory's runs, spend, PRs and PR costs
in a window, and grouping by period (docs/metrics.md says what each counts).

Every aggregate is computed by the database (GROUP BY); Python only arranges the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import literal
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from gateway.foundation.store import tables as t
from gateway.platform.analytics.dialect_sql import period_key, period_name
from gateway.platform.analytics.window import Window

r, u, p = t.runs, t.run_usage, t.pull_requests
UNKNOWN = "UNKNOWN"  # the group of records that do not name the grouped entity


def in_window(column: Any, w: Window) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    return column >= w.start, column < w.end


def factory_runs(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The runs a factory metric counts: the factory's, created in the window."""
    return (r.c.factory_uid == factory_uid, *in_window(r.c.created_at, w))


def factory_spend(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The usage a factory metric counts: of the factory's runs created in the window."""
    return (u.c.factory_uid == factory_uid, *in_window(u.c.run_created_at, w))


def factory_prs(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The PRs a factory metric counts: the factory's, first seen in the window."""
    return (p.c.factory_uid == factory_uid, *in_window(p.c.first_seen_at, w))


def factory_pr_costs(factory_uid: str, w: Window) -> tuple[ColumnElement[bool], ...]:
    """The per-component costs of those PRs."""
    pc = t.pr_costs
    return (pc.c.factory_uid == factory_uid, *in_window(pc.c.first_seen_at, w))


async def grouped(
    conn: AsyncConnection,
    query: Any,  # a Select
    moment: Any,
    w: Window,
    keys: Sequence[Any] = (),
) -> list[Grouped]:
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
    result = await conn.execute(query)
    return [Grouped(dict(row._mapping)) for row in result]


class Grouped(SimpleNamespace):
    """A row of `grouped`, its `period` named 'YYYY-MM-DD' ('' without a period)."""

    period: str

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        super().__init__(**mapping)
        key = mapping["period"]
        self.period = period_name(key) if key else ""


def money(value: Any) -> float:
    return round(float(value or 0.0), 6)


def ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None
