"""Field types shared by the API's request and response Structs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, TypeVar

from msgspec import UNSET, Meta, UnsetType

from gateway.kernel.types import Timestamp as Timestamp

Moment = Annotated[datetime, Meta(tz=True, description="RFC 3339 with a time zone offset")]
Limit = Annotated[int, Meta(ge=1, le=100, description="page size")]
Cursor = Annotated[str, Meta(description="page_info.next_cursor of the previous page")]


def in_utc(moment: datetime | None, name: str) -> datetime | None:
    """A `Moment` query field in UTC; a ValueError naming `name` when it cannot be."""
    if moment is None:
        return None
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+05:00
        raise ValueError(f"{name}: date-time out of range") from exc


T = TypeVar("T")


def unless_none(value: T | None) -> T | UnsetType:
    """An optional field of an answer: absent (UNSET) rather than null when there is no value."""
    return UNSET if value is None else value
