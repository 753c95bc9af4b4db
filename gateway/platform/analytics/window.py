"""The date range and binning of factory metrics (spec 4.6): defaults, validation, periods.

`start` is inclusive and `end` exclusive; without them the range is the 30 days up to now. With a
period (day, week or month, in UTC; weeks start on Monday) the range is cut into the periods it
touches, at most MAX_PERIODS of them, and every per-period series lists one value per period.
Periods are named by their first day, 'YYYY-MM-DD', the same key the SQL binning produces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal, TypeVar

from gateway.kernel.errors import InvalidRequest

Period = Literal["day", "week", "month"]
N = TypeVar("N", int, float)
MAX_PERIODS = 365
DEFAULT_SPAN = timedelta(days=30)


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime
    end: datetime
    period: Period | None
    periods: tuple[str, ...]  # first day of each period; empty without a period

    def series(self, values: Mapping[str, N]) -> list[N]:
        """`values` by period key as one value per period, zero where none."""
        return [values.get(key, 0) for key in self.periods]

    def period_list(self) -> list[date]:
        """The first day of each period, as answers list them."""
        return [date.fromisoformat(key) for key in self.periods]


def window(
    start: datetime | None, end: datetime | None, period: Period | None, now: datetime
) -> Window:
    """The validated range; 400 naming the parameter at fault."""
    end = end or now
    try:
        start = start or end - DEFAULT_SPAN
    except OverflowError as exc:  # end_date within 30 days of year 1
        raise InvalidRequest(
            "start_date: the default (end_date - 30 days) is out of range"
        ) from exc
    if start >= end:
        raise InvalidRequest("start_date: must be before end_date")
    periods: tuple[str, ...] = ()
    if period is not None:
        periods = tuple(day.isoformat() for day in period_starts(start, end, period))
    return Window(start, end, period, periods)


def period_starts(start: datetime, end: datetime, period: Period) -> list[date]:
    """First days of the periods that [start, end) touches; 400 beyond MAX_PERIODS."""
    first = _floor(start.date(), period)
    # the period holding the last instant of the range (end is exclusive)
    last = _floor((end - timedelta(microseconds=1)).date(), period)
    if _count(first, last, period) > MAX_PERIODS:
        raise InvalidRequest(
            f"group_by_period: the range spans more than {MAX_PERIODS} {period} periods"
        )
    days = [first]
    while days[-1] < last:
        days.append(_next(days[-1], period))
    return days


def period_key(moment: datetime, period: Period) -> str:
    """The key of the period holding `moment` (its first day), as `Window.periods` lists them."""
    return _floor(moment.date(), period).isoformat()


def _floor(day: date, period: Period) -> date:
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    return day


def _next(day: date, period: Period) -> date:
    if period == "week":
        return day + timedelta(days=7)
    if period == "month":
        return date(day.year + day.month // 12, day.month % 12 + 1, 1)
    return day + timedelta(days=1)


def _count(first: date, last: date, period: Period) -> int:
    if period == "month":
        return (last.year - first.year) * 12 + last.month - first.month + 1
    return (last - first).days // (7 if period == "week" else 1) + 1
