"""One delivery judged against some triggers, whatever its source: what a backtest reports per
stored delivery and what a delivery's trace explains when it is read.

A trigger is tested (`Tested`) on the events it listens to, among the `SourceEvent`s the delivery
normalizes to (`automations.source_events`), with the matcher the evaluator's index holds for it;
the first that matches decides (`decide`), else the first mismatch is named. What a kind adds is
how a trigger is compiled and a mismatch explained:

- a custom webhook's payload filter (`payload_tests`): compiled with `filters.compile_many`,
  explained by `filters.explain` (the semantics the compiled matcher is held to);
- a provider trigger (`provider_test`): compiled by `compile_trigger_filter` over
  `plain_filter`, in a factory reached by repository as the evaluator routes events; explained by
  `failing`, the reference semantics (`gateway.webhook_gateway.providers.failing_key`) the compiled
  matchers are held to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import orjson

from factory_format import Trigger as CanonicalTrigger
from factory_format.triggers import event_spec
from filters import Filter, compile_many, explain
from gateway.webhook_gateway.automations.source_events import ROUTED, WEBHOOK, SourceEvent
from gateway.webhook_gateway.automations.source_rows import plain_filter
from gateway.webhook_gateway.providers import (
    TriggerEvent,
    TriggerFilterError,
    compile_trigger_filter,
    failing_key,
    parse_trigger_filter,
)
from gateway.webhook_gateway.providers.values import NAMES

REPOSITORY_KEY: Final = "repos"  # the key named when the factory does not list the repository
NO_EVENT: Final = "event"  # the key named when no trigger listens to the delivery's events
Explained = tuple[str | None, str | None]  # the mismatch, the path (key) it names


class Tested(NamedTuple):
    """A trigger as it is judged: its position in its automation's triggers, what it listens to
    ((kind, event): a webhook's is (`webhook`, its uid)), whether an event matches it, and why
    one does not (given all the delivery's events)."""

    position: int
    listens: tuple[str, str]
    matches: Callable[[SourceEvent], bool]
    explain: Callable[[SourceEvent, Sequence[SourceEvent]], Explained]


class Decision(NamedTuple):
    matched: bool
    position: int  # of the trigger that decided (-1: none listens to the events)
    mismatch: str | None
    path: str | None


def decide(tested: Sequence[Tested], events: Sequence[SourceEvent]) -> Decision:
    """The first trigger that matches one of the `events` it listens to, else the first
    mismatch of a trigger listening to one of them (`event`: none listens to any)."""
    first: Decision | None = None
    for item in tested:
        for event in events:
            if (event.kind, event.event) != item.listens:
                continue
            if item.matches(event):
                return Decision(True, item.position, None, None)
            if first is None:
                first = Decision(False, item.position, *item.explain(event, events))
    if first is not None:
        return first
    names = ", ".join(e.event for e in events) or "none"
    text = f"event: the delivery is {names}, which the trigger does not listen to"
    return Decision(False, -1, text, NO_EVENT)


# --- custom webhooks: payload filters ----------------------------------------------------------


def payload_tests(webhook_uid: str, filters: Sequence[tuple[int, Filter | None]]) -> list[Tested]:
    """A webhook's payload filters, (position, filter) each, as tested triggers."""
    return [_payload_test(webhook_uid, position, tree) for position, tree in filters]


def _payload_test(webhook_uid: str, position: int, tree: Filter | None) -> Tested:
    matcher = compile_many({0: tree})  # as the evaluator's index compiles it

    def matches(event: SourceEvent) -> bool:
        return bool(matcher.match(event.values))

    def explained(event: SourceEvent, _events: Sequence[SourceEvent]) -> Explained:
        found = explain(tree, event.values)
        return (str(found), found.path) if found is not None else (None, None)

    return Tested(position, (WEBHOOK, webhook_uid), matches, explained)


# --- provider connections: provider triggers ---------------------------------------------------


def provider_test(
    position: int,
    trigger: CanonicalTrigger,
    repositories: frozenset[str] | None,
    strict: bool = True,
) -> Tested:
    """`repositories`: those of the trigger's factory (None: a trigger tried alone, no factory
    to route by). A filter the evaluator cannot compile raises `TriggerFilterError`, unless not
    `strict`: then it matches nothing, as the evaluator skips it, and is named `filter`."""
    try:
        matcher = compile_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    except TriggerFilterError:
        if strict:
            raise
        matcher = None

    def matches(event: SourceEvent) -> bool:
        found = event.trigger
        assert found is not None  # a provider's events carry theirs
        return matcher is not None and reaches(found, repositories) and matcher(found)

    def explained(event: SourceEvent, events: Sequence[SourceEvent]) -> Explained:
        assert event.trigger is not None
        key = failing(trigger, repositories, event.trigger) or "filter"
        return mismatch(key, [e.trigger for e in events if e.trigger is not None]), key

    return Tested(position, (trigger.provider, trigger.event), matches, explained)


def reaches(event: TriggerEvent, repositories: frozenset[str] | None) -> bool:
    """Whether `event` reaches a factory listing `repositories` (None: no factory to route
    by, a trigger tried alone)."""
    if repositories is None or event.provider not in ROUTED:
        return True
    return any(repo in repositories for repo in event.values.get("repos", ()))


def failing(
    trigger: CanonicalTrigger, repositories: frozenset[str] | None, event: TriggerEvent
) -> str | None:
    """The key `event` fails on `trigger` in a factory listing `repositories` (`repos` when a
    GitHub or GitLab factory does not list the event's repository), or None if it matches."""
    if not reaches(event, repositories):
        return REPOSITORY_KEY
    try:
        conditions = parse_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    except TriggerFilterError:
        return "filter"  # stored invalid: the evaluator skips such a trigger too
    key = failing_key(conditions, event)
    return None if key is None else _shown(trigger, key)


def _shown(trigger: CanonicalTrigger, key: str) -> str:
    """A by-name key as the file writes it: `team_ids:names` -> `teams (names)`."""
    if not key.endswith(NAMES):
        return key
    canonical = key.removesuffix(NAMES)
    spec = event_spec(trigger.provider, trigger.event)
    alias = next((a.name for a in spec.aliases if a.canonical == canonical), None) if spec else None
    return f"{alias or canonical} (names)"


def mismatch(key: str, events: Sequence[TriggerEvent]) -> str:
    if key == REPOSITORY_KEY and events and events[0].repository:
        return f"repos: the factory's repositories do not list {events[0].repository}"
    if key.endswith(" (names)"):
        return f"{key}: the payload names none of the listed ones"
    values: Any = events[0].values.get(key) if events else None
    if values is None:
        return f"{key}: the payload does not tell it (docs/providers.md)"
    return f"{key}: the event's {orjson.dumps(values).decode()} fail the filter"
