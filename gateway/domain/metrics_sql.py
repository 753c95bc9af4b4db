"""SQL expressions factory metrics need that SQLite and PostgreSQL spell differently.

SQLite stores UTC timestamps as text ('YYYY-MM-DD HH:MM:SS.ffffff'); PostgreSQL as timestamptz.
Both functions give the same values on either, so the aggregation itself is one query.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, String, cast, func
from sqlalchemy.sql.elements import ColumnElement

from gateway.domain.metrics_window import Period

Dialect = str  # "sqlite" | "postgresql"


def period_key(moment: Any, period: Period, dialect: Dialect) -> ColumnElement[str]:
    """The first day of the UTC `period` holding `moment`, as 'YYYY-MM-DD'."""
    if dialect == "postgresql":
        utc = func.timezone("UTC", moment)
        return func.to_char(func.date_trunc(period, utc), "YYYY-MM-DD")
    if period == "month":
        return func.strftime("%Y-%m-01", moment, type_=String)
    if period == "week":  # the next Sunday (or the day itself), six days back: Monday
        return func.date(moment, "weekday 0", "-6 days", type_=String)
    return func.date(moment, type_=String)


def seconds_between(later: Any, earlier: Any, dialect: Dialect) -> ColumnElement[float]:
    if dialect == "postgresql":
        return cast(func.extract("epoch", later - earlier), Float)
    return (func.julianday(later) - func.julianday(earlier)) * 86400.0
