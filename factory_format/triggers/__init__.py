"""Triggers: the catalogue of providers, events and filter keys; the matcher grammar; cron in
robfig/cron's grammar; one trigger checked against all of them."""

from __future__ import annotations

from .catalogue import (
    CATALOGUE,
    WEBHOOK_UID_PATTERN,
    WORK_ITEM_STAGES,
    EventSpec,
    FilterKey,
    KeyAlias,
    ProviderSpec,
    ValueType,
    event_spec,
    provider_spec,
)
from .cron import (
    MAX_EVERY_SECONDS,
    MIN_EVERY_SECONDS,
    CronError,
    CronSchedule,
    next_slot,
    parse_cron,
)
from .matchers import Matcher
from .model import Schedule, Trigger

__all__ = [
    "CATALOGUE",
    "MAX_EVERY_SECONDS",
    "MIN_EVERY_SECONDS",
    "WEBHOOK_UID_PATTERN",
    "WORK_ITEM_STAGES",
    "CronError",
    "CronSchedule",
    "EventSpec",
    "FilterKey",
    "KeyAlias",
    "Matcher",
    "ProviderSpec",
    "Schedule",
    "Trigger",
    "ValueType",
    "event_spec",
    "next_slot",
    "parse_cron",
    "provider_spec",
]
