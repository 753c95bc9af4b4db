"""SQL expressions factory metrics need that SQLite and PostgreSQL spell differently.

SQLite stores UTC timestamps as text ('YYYY-MM-DD HH:MM:SS.ffffff'); PostgreSQL as timestamptz.
Both functions give the same values on either, so the aggregation itself is one query.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, String, cast, func
from sqlalchemy.sql.elements import ColumnElement

from gateway.platform.analytics.window import Period

Dialect = str  # "sqlite" | "postgresql"


def period_key(moment: Any, period: Period, dialect: Dialect) -> ColumnElement[Any]:
    """The first day of the UTC `period` holding `moment`: 'YYYY-MM-DD' on SQLite, the
    timestamp of its start on PostgreSQL (grouping on it is cheaper than on text; see
    `period_name`)."""
    if dialect == "postgresql":
        return func.date_trunc(period, func.timezone("UTC", moment))
    if period == "month":
        return func.strftime("%Y-%m-01", moment, type_=String)
    if period == "week":  # the next Sunday (or the day itself), six days back: Monday
        return func.date(moment, "weekday 0", "-6 days", type_=String)
    return func.date(moment, type_=String)


def period_name(key: Any) -> str:
    """A `period_key` value as 'YYYY-MM-DD'."""
    return key.date().isoformat() if isinstance(key, datetime) else str(key)[:10]


def seconds_between(later: Any, earlier: Any, dialect: Dialect) -> ColumnElement[float]:
    if dialect == "postgresql":
        return cast(func.extract("epoch", later - earlier), Float)
    return (func.julianday(later) - func.julianday(earlier)) * 86400.0
