"""Cron in robfig/cron's standard grammar, UTC only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from croniter import croniter
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from factory_format.triggers import CronError, CronSchedule, next_slot, parse_cron
from tests.examples import examples


@pytest.mark.parametrize(
    ("text", "minutes", "hours", "days", "months", "weekdays"),
    [
        ("0 9 * * 1", (0,), (9,), range(1, 32), range(1, 13), (1,)),
        (
            "*/15 * * * MON-FRI",
            (0, 15, 30, 45),
            range(24),
            range(1, 32),
            range(1, 13),
            (1, 2, 3, 4, 5),
        ),
        ("5/20 1-5/2 ? JAN,jul *", (5, 25, 45), (1, 3, 5), range(1, 32), (1, 7), range(7)),
        ("0 0 1,15 * sun", (0,), (0,), (1, 15), range(1, 13), (0,)),
        ("59 23 31 12 6", (59,), (23,), (31,), (12,), (6,)),
        ("  0   9  *  *  1  ", (0,), (9,), range(1, 32), range(1, 13), (1,)),
    ],
)
def test_five_fields(
    text: str, minutes: object, hours: object, days: object, months: object, weekdays: object
) -> None:
    cron = parse_cron(text)
    assert cron.every_seconds is None
    assert cron.minutes == tuple(minutes)  # type: ignore[arg-type]
    assert cron.hours == tuple(hours)  # type: ignore[arg-type]
    assert cron.days_of_month == tuple(days)  # type: ignore[arg-type]
    assert cron.months == tuple(months)  # type: ignore[arg-type]
    assert cron.days_of_week == tuple(weekdays)  # type: ignore[arg-type]
    assert cron.expression == " ".join(text.split())


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ],
)
def test_descriptors(text: str, same_as: str) -> None:
    cron, fields = parse_cron(text), parse_cron(same_as)
    assert cron.expression == text
    assert (cron.minutes, cron.hours, cron.days_of_month, cron.months, cron.days_of_week) == (
        fields.minutes,
        fields.hours,
        fields.days_of_month,
        fields.months,
        fields.days_of_week,
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("@every 1h", 3600),
        ("@every 90m", 5400),
        ("@every 1h30m", 5400),
        ("@every 1.5h", 5400),
        ("@every 60s", 60),
        ("@every 2h0m0s", 7200),
        ("@every 90000ms", 90),
        ("@every 8784h", 366 * 24 * 3600),
    ],
)
def test_every(text: str, seconds: int) -> None:
    assert parse_cron(text).every_seconds == seconds


def test_day_fields_record_whether_they_are_restricted() -> None:
    both = parse_cron("0 0 13 * 5")  # robfig: the 13th OR a Friday
    assert not both.day_of_month_star and not both.day_of_week_star
    assert parse_cron("0 0 ? * 5").day_of_month_star
    # robfig drops the star of a stepped `*` (`*/2`: every other day is a restriction)
    assert parse_cron("0 0 */1 * 5").day_of_month_star
    assert not parse_cron("0 0 */2 * 5").day_of_month_star


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("0 9 * *", "exactly 5 fields"),
        ("0 0 9 * * *", "seconds field"),
        ("CRON_TZ=UTC 0 9 * * *", "UTC"),
        ("TZ=Europe/Paris 0 9 * * *", "UTC"),
        ("60 * * * *", "0-59"),
        ("* 24 * * *", "0-23"),
        ("* * 0 * *", "1-31"),
        ("* * * 13 *", "1-12"),
        ("0 0 * * 7", "Sunday is 0"),
        ("5-1 * * * *", "starts after it ends"),
        ("*/0 * * * *", "positive"),
        ("1/2/3 * * * *", "slashes"),
        ("1-2-3 * * * *", "hyphens"),
        ("*-5 * * * *", "cannot start"),
        ("a * * * *", "not a number"),
        ("-1 * * * *", "not a number"),
        ("0 0 * FOO *", "not a number or a name"),
        ("0 0 31 2 *", "never matches"),
        ("0 0 30 2,4 *", None),
        ("@Daily", "unknown descriptor"),
        ("@reboot", "unknown descriptor"),
        ("@every", "needs a duration"),
        ("@every 30s", "at least 1m"),
        ("@every 8785h", "at most 8784h"),
        ("@every 87600000h", "at most 8784h"),
        ("@every " + "9" * 190 + "h", "at most 8784h"),
        ("@every -1h", "positive"),
        ("@every 1d", "not a duration"),
        ("@every h", "not a duration"),
        ("x" * 201, "longer than"),
    ],
)
def test_refused(text: str, words: str | None) -> None:
    if words is None:  # 30 April exists: accepted
        parse_cron(text)
        return
    with pytest.raises(CronError, match=words):
        parse_cron(text)


def test_a_never_matching_day_is_accepted_when_the_weekday_is_restricted() -> None:
    # robfig ORs restricted day fields: every Monday still fires
    assert parse_cron("0 0 31 2 1").days_of_week == (1,)


# --- the next slot --------------------------------------------------------------------------

_FIELD_VALUES = {
    "minute": (0, 59),
    "hour": (0, 23),
    "day": (1, 28),
    "month": (1, 12),
    "weekday": (0, 6),
}


def _field(name: str) -> st.SearchStrategy[str]:
    low, high = _FIELD_VALUES[name]
    value = st.integers(low, high).map(str)
    # ranges of two values at least (croniter reads a degenerate `0-0` weekday range oddly)
    span = st.tuples(st.integers(low, high - 1), st.integers(1, high - low)).map(
        lambda pair: f"{pair[0]}-{min(pair[0] + pair[1], high)}"
    )
    stepped = st.tuples(st.sampled_from(["*", f"{low}-{high}"]), st.integers(1, 7)).map(
        lambda pair: f"{pair[0]}/{pair[1]}"
    )
    listed = st.lists(value, min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), value, span, stepped, listed)


@settings(max_examples=examples(300))
@given(
    st.tuples(*(_field(name) for name in _FIELD_VALUES)).map(" ".join),
    st.integers(1_600_000_000, 2_100_000_000),
)
def test_next_slot_agrees_with_croniter(expression: str, moment: int) -> None:
    """Five-field expressions fire when croniter (Vixie cron's day rule, as robfig's) says.
    Where the two differ, robfig is followed: `*/1` in a day field is unrestricted for robfig
    (its star stays) and a restriction for croniter, and the reverse for `0-6`."""
    fields = expression.split(" ")
    assume("*/1" not in (fields[2], fields[4]))
    # croniter also reads a weekday field naming all seven days (`0-6`) as `*`; robfig keeps
    # it a restriction
    assume(fields[4] == "*" or len(parse_cron(expression).days_of_week) < 7)
    after = datetime.fromtimestamp(moment, UTC)
    expected = croniter(expression, after).get_next(datetime).astimezone(UTC)
    assert next_slot(parse_cron(expression), after) == expected


def test_next_slot_of_descriptors_and_every() -> None:
    after = datetime(2026, 11, 26, 22, 41, 7, tzinfo=UTC)
    assert next_slot(parse_cron("@daily"), after) == datetime(2026, 11, 27, tzinfo=UTC)
    assert next_slot(parse_cron("0 0 29 2 *"), after) == datetime(2028, 2, 29, tzinfo=UTC)
    # @every: the multiples of its interval since the Unix epoch, whatever process asks
    slot = next_slot(parse_cron("@every 90m"), after)
    assert slot > after and slot.timestamp() % 5400 == 0 and slot - after <= timedelta(minutes=90)
    assert next_slot(parse_cron("@every 90m"), slot) == slot + timedelta(minutes=90)


def test_the_longest_every_has_a_slot_and_none_past_what_a_date_holds() -> None:
    longest = parse_cron("@every 8784h")
    after = datetime(2026, 12, 2, tzinfo=UTC)
    slot = next_slot(longest, after)
    assert after < slot <= after + timedelta(days=366)
    # a stored interval from before the cap: refused as a CronError (the callers skip it),
    # never an OverflowError from the date arithmetic
    huge = CronSchedule(expression="@every 87600000h", every_seconds=87_600_000 * 3600)
    with pytest.raises(CronError, match="no slot"):
        next_slot(huge, after)
