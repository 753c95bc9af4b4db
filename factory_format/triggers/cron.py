"""Cron expressions in the grammar of robfig/cron's standard parser, always in UTC: five
fields (minute hour day-of-month month day-of-week) with `*`, `?`, lists, ranges, steps and
month/weekday names, or a descriptor (`@daily`, `@every 90m`). `CRON_TZ=`/`TZ=` prefixes and
six-field (seconds) forms are refused: schedules of a factory file are UTC by definition."""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, date, datetime, timedelta

from msgspec import Struct

from ..diagnostics import show

__all__ = [
    "MAX_EVERY_SECONDS",
    "MIN_EVERY_SECONDS",
    "CronError",
    "CronSchedule",
    "next_slot",
    "parse_cron",
]

MIN_EVERY_SECONDS = 60
# `@every` at most a (leap) year: @yearly says the same more plainly; a longer interval
# puts its slots past what a date can hold (year 9999) or past any use
MAX_EVERY_SECONDS = 366 * 24 * 3600
MAX_LENGTH = 200


class CronError(ValueError):
    """The message says what is wrong and how to write it."""


class CronSchedule(Struct, frozen=True, kw_only=True):
    """A parsed expression. For `@every`, `every_seconds` is set and the field sets are empty;
    otherwise each field is the sorted set of values it allows. Robfig's rule for days: when
    both day fields are restricted (neither starts with `*` or `?`), a day matches if either
    does."""

    expression: str
    every_seconds: int | None = None
    minutes: tuple[int, ...] = ()
    hours: tuple[int, ...] = ()
    days_of_month: tuple[int, ...] = ()
    months: tuple[int, ...] = ()
    days_of_week: tuple[int, ...] = ()
    day_of_month_star: bool = True
    day_of_week_star: bool = True


_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_WEEKDAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (name, min, max, names) per field, in order
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _WEEKDAYS),
)
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_cron(text: str) -> CronSchedule:
    spec = " ".join(text.split())
    if not spec:
        raise CronError('the cron expression is empty; write five fields, like "0 9 * * 1"')
    if len(spec) > MAX_LENGTH:
        raise CronError(f"the cron expression is longer than {MAX_LENGTH} characters")
    if spec.startswith(("CRON_TZ=", "TZ=")):
        raise CronError(
            "time zone prefixes (CRON_TZ=, TZ=) are not accepted: schedules run in UTC; "
            "remove the prefix and convert the time to UTC"
        )
    if spec == "@every":
        raise CronError("@every needs a duration, like @every 1h or @every 90m")
    if spec.startswith("@every "):
        return CronSchedule(expression=spec, every_seconds=_every_seconds(spec[7:].strip()))
    if spec.startswith("@"):
        fields = _DESCRIPTORS.get(spec)
        if fields is None:
            known = ", ".join([*_DESCRIPTORS, "@every <duration>"])
            raise CronError(f"unknown descriptor {show(spec)}; use one of {known}")
        return _fields(spec, fields)
    return _fields(spec, spec)


def _fields(expression: str, spec: str) -> CronSchedule:
    parts = spec.split(" ")
    if len(parts) == 6:
        raise CronError(
            "six fields: a seconds field is not accepted; write five fields "
            "(minute hour day-of-month month day-of-week)"
        )
    if len(parts) != 5:
        raise CronError(
            f"expected exactly 5 fields (minute hour day-of-month month day-of-week), "
            f"found {len(parts)}"
        )
    sets = [_field(part, *_FIELDS[i]) for i, part in enumerate(parts)]
    schedule = CronSchedule(
        expression=expression,
        minutes=sets[0],
        hours=sets[1],
        days_of_month=sets[2],
        months=sets[3],
        days_of_week=sets[4],
        day_of_month_star=_star(parts[2]),
        day_of_week_star=_star(parts[4]),
    )
    _check_reachable(schedule)
    return schedule


def _star(text: str) -> bool:
    """Whether a day field is unrestricted as robfig reads it: an item `*` or `?`, alone or with
    a step of 1 (`*/2` is a restriction: its star is dropped, robfig's `extra = 0`)."""
    for item in text.split(","):
        head, _, step = item.partition("/")
        if head in ("*", "?") and step in ("", "1"):
            return True
    return False


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[int, ...]:
    values: set[int] = set()
    for item in text.split(","):
        values.update(_range(item, name, low, high, names))
    return tuple(sorted(values))


def _range(item: str, name: str, low: int, high: int, names: dict[str, int]) -> range:
    range_and_step = item.split("/")
    if len(range_and_step) > 2:
        raise CronError(f"{name} field {show(item)}: too many slashes")
    bounds = range_and_step[0].split("-")
    if bounds[0] in ("*", "?"):
        if len(bounds) > 1:
            raise CronError(f"{name} field {show(item)}: `*` cannot start a range")
        start, end = low, high
    else:
        if len(bounds) > 2:
            raise CronError(f"{name} field {show(item)}: too many hyphens")
        start = _value(bounds[0], name, item, names)
        end = _value(bounds[1], name, item, names) if len(bounds) == 2 else start
        if len(range_and_step) == 2 and len(bounds) == 1:
            end = high  # robfig: "N/step" means N-max/step
    step = _value(range_and_step[1], name, item, {}) if len(range_and_step) == 2 else 1
    if start < low or end > high:
        hint = " (Sunday is 0 or SUN)" if name == "day of week" and end == 7 else ""
        raise CronError(f"{name} field {show(item)}: values must lie in {low}-{high}{hint}")
    if start > end:
        raise CronError(f"{name} field {show(item)}: the range starts after it ends")
    if step == 0:
        raise CronError(f"{name} field {show(item)}: the step must be a positive number")
    return range(start, end + 1, step)


def _value(text: str, name: str, item: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    if named is not None:
        return named
    if not text.isascii() or not text.isdigit():
        expected = "a number or a name" if names else "a number"
        raise CronError(f"{name} field {show(item)}: {show(text)} is not {expected}")
    return int(text)


def _check_reachable(schedule: CronSchedule) -> None:
    """Refuse a day-of-month that no selected month has (`0 0 31 2 *`): robfig would accept
    it and never fire, which is never what the author meant."""
    if schedule.day_of_month_star or not schedule.day_of_week_star:
        return
    longest = max(monthrange(2024, m)[1] for m in schedule.months)  # 2024: a leap year
    if min(schedule.days_of_month) > longest:
        raise CronError(
            f"{show(schedule.expression)} never matches a date: no selected month has day "
            f"{min(schedule.days_of_month)}"
        )


def _every_seconds(duration: str) -> int:
    """A Go duration (`1h30m`, `90s`, `1.5h`), at least a minute."""
    total, pos = 0.0, 0
    text = duration[1:] if duration.startswith("+") else duration
    if not text or text.startswith("-"):
        raise CronError(f"@every {show(duration)}: the duration must be positive, like 1h or 90m")
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None or match.group(1) in ("", "."):
            raise CronError(
                f"@every {show(duration)}: not a duration; write a number and a unit "
                "(s, m or h), like 30m or 1h30m"
            )
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if total < MIN_EVERY_SECONDS:
        raise CronError(f"@every {show(duration)}: the interval must be at least 1m")
    if total > MAX_EVERY_SECONDS:
        raise CronError(
            f"@every {show(duration)}: the interval must be at most 8784h (366 days); "
            "use @yearly for once a year"
        )
    return int(total)


# a day-of-month that falls on a restricted weekday and month can be years away (29 February on
# a Monday): the search for the next matching day looks this far ahead
_SEARCH_DAYS = 366 * 29


def next_slot(schedule: CronSchedule, after: datetime) -> datetime:
    """The first slot strictly after `after`, in UTC, as robfig/cron's standard schedule fires
    (whole minutes). `@every D` is anchored at the Unix epoch: its slots are the multiples of D
    (robfig counts from when its process started, which would give every process other slots)."""
    after = after.astimezone(UTC)
    if schedule.every_seconds is not None:
        step = schedule.every_seconds
        seconds = int(after.timestamp()) // step * step + step
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError) as exc:  # past year 9999
            raise CronError(f"{show(schedule.expression)} has no slot a date can hold") from exc
    start = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.date()
    for _ in range(_SEARCH_DAYS):
        if _day_matches(schedule, day):
            found = _first_time(schedule, day, start if day == start.date() else None)
            if found is not None:
                return found
        if day == date.max:
            break
        day += timedelta(days=1)
    raise CronError(f"{show(schedule.expression)} matches no date in the next {_SEARCH_DAYS} days")


def _day_matches(schedule: CronSchedule, day: date) -> bool:
    if day.month not in schedule.months:
        return False
    dom = day.day in schedule.days_of_month
    dow = (day.isoweekday() % 7) in schedule.days_of_week  # Sunday is 0
    if schedule.day_of_month_star or schedule.day_of_week_star:
        return dom and dow  # a `*` field allows every day: the other one decides
    return dom or dow  # both restricted: either matches (robfig, as Vixie cron)


def _first_time(schedule: CronSchedule, day: date, start: datetime | None) -> datetime | None:
    """The day's first (hour, minute) of the schedule at or after `start` (None: any)."""
    for hour in schedule.hours:
        if start is not None and hour < start.hour:
            continue
        for minute in schedule.minutes:
            if start is not None and hour == start.hour and minute < start.minute:
                continue
            return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
    return None
