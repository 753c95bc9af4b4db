"""Cron schedules: the 5-field syntax (minute hour day-of-month month day-of-week), evaluated in
UTC. What is accepted is what factory files accept in an inline schedule (factory_format's
robfig/cron parser, without its descriptors): one grammar for both, so a reversed range
(`1-0`) or a weekday 7 is refused here as it is there. Iteration is croniter's."""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterError, croniter

from factory_format.triggers import CronError, parse_cron
from gateway.kernel.errors import InvalidRequest

MAX_LENGTH = 200


def check(expression: str, field: str = "cron_schedule") -> str:
    """The expression, normalised to single spaces; a 400 naming `field` when it is not a
    valid 5-field cron expression (no seconds field, no @-macros)."""
    parts = expression.split()
    if len(expression) > MAX_LENGTH or len(parts) != 5:
        raise InvalidRequest(
            f"{field}: expected 5 fields (minute hour day-of-month month day-of-week), "
            'for example "0 9 * * *"'
        )
    normalised = " ".join(parts)
    try:
        parse_cron(normalised)
    except CronError as exc:
        raise InvalidRequest(f"{field}: {exc}") from None
    if not croniter.is_valid(normalised):
        raise InvalidRequest(f"{field}: {expression!r} is not a valid cron expression")
    try:
        next_slot(normalised, datetime.now(UTC))
    except CroniterError as exc:  # valid fields that no date satisfies (31 February)
        raise InvalidRequest(f"{field}: {expression!r} never matches a date") from exc
    return normalised


def next_slot(expression: str, after: datetime) -> datetime:
    """The first slot strictly after `after` (UTC, whole minutes)."""
    start = after.astimezone(UTC)
    slot: datetime = croniter(expression, start).get_next(datetime)
    return slot.astimezone(UTC)
