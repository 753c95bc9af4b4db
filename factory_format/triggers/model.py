"""A trigger as stored: canonical filter keys (aliases rewritten), matchers in canonical form,
the payload pattern in the filters package's JSON form, and the inline schedule."""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from .matchers import Matcher

__all__ = ["Schedule", "Trigger"]


class Schedule(Struct, frozen=True, omit_defaults=True, kw_only=True):
    """An inline schedule. `name` is its identity within the automation (None for the one
    unnamed schedule an automation may have); `cron` is normalized to single spaces."""

    cron: str
    name: str | None = None


class Trigger(Struct, frozen=True, omit_defaults=True, kw_only=True):
    provider: str
    event: str
    filter: dict[str, Matcher] = field(default_factory=dict)
    payload: dict[str, Any] | None = None  # webhook/received only
    schedule: Schedule | None = None  # schedule/cron_fired only
