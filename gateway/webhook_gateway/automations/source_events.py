"""The one normalized event: what an accepted delivery is matched as, whatever its source.

A source is a custom webhook (kind `WEBHOOK`) or a provider connection (kind: its provider,
GitHub, Slack, Linear, Jira or GitLab). A delivery normalizes into `SourceEvent`s:

- a custom webhook's into one, named by the webhook's uid (the webhook is its one event), whose
  values are the payload itself: the payload filters of its automations read it;
- a provider connection's into the trigger events `gateway.webhook_gateway.providers` reads from its
payload,
  stored request headers and the connection's bot (none: an action no trigger listens to), whose
  values are the ones provider trigger filters read, in comparison form.

Each event carries its route: where the index files the triggers that can match it, so matching
is one dict access per event and only those triggers' checks (`trigger_index.Listeners`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from gateway.webhook_gateway.providers import TriggerEvent, normalize
from gateway.webhook_gateway.providers.work_items import Source, source_of

WEBHOOK: Final = "webhook"  # the kind of a custom webhook source
# GitHub and GitLab events reach only the factories whose repositories list their repository
ROUTED = frozenset({"github", "gitlab"})
NOT_JSON: Final = object()  # a payload that is no JSON: matches only triggers without a filter
Route = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LiveSource:
    """An enabled, not deleted source. `scope`: what its triggers are compiled per: a custom
    webhook's are its own (its factory's automations listening to it), a connection's are its
    team's (it serves every factory of the team). `bot`: a connection's own user, whose
    events its normalizer drops."""

    uid: str
    name: str
    kind: str
    team_uid: str
    scope: str
    bot: str | None = None
    is_webhook: bool = field(init=False)  # read per delivery: a field, not a property

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_webhook", self.kind == WEBHOOK)


class SourceEvent(NamedTuple):
    """One event of a delivery: its kind and name (a provider's event; a webhook's uid), what
    filters read (`values`), the route the triggers that can match it are filed under (None:
    none can, as a GitHub event without a repository) and, of a provider's, the trigger event
    as normalized (its repository; what explanations read)."""

    kind: str
    event: str
    values: Any
    route: Route | None
    trigger: TriggerEvent | None = None


@dataclass(slots=True)
class NormalizedDelivery:
    """An accepted delivery as the evaluator, the trace and the backtests read it."""

    source: LiveSource
    payload: Any  # parsed; NOT_JSON when it is not JSON
    headers: dict[str, str]  # the stored request headers (a provider's name its event)
    events: list[SourceEvent]

    def work_item(self) -> Source | None:
        """The issue, pull request or thread the delivery is about (a provider's only)."""
        if self.source.is_webhook:
            return None
        return source_of(self.source.kind, self.headers, self.payload)

    def triggers(self) -> list[TriggerEvent]:
        """A provider delivery's events as normalized (a webhook's: none)."""
        return [e.trigger for e in self.events if e.trigger is not None]


def webhook_route(webhook_uid: str) -> Route:
    return (WEBHOOK, webhook_uid)


def webhook_event(webhook_uid: str, payload: Any) -> SourceEvent:
    """A custom webhook's delivery as its one event: named by the webhook, its payload the
    values its payload filters read."""
    return SourceEvent(WEBHOOK, webhook_uid, payload, (WEBHOOK, webhook_uid))


def route_of(event: TriggerEvent) -> Route | None:
    """A provider event's route: (provider, event), and for GitHub and GitLab the repository
    (only the factories listing it are reached)."""
    if event.provider in ROUTED:
        repos = event.values.get("repos")
        if not repos:
            return None
        return (event.provider, event.event, str(repos[0]))
    return (event.provider, event.event)


def normalized(source: LiveSource, payload: Any, headers: dict[str, str]) -> NormalizedDelivery:
    """`payload` parsed (NOT_JSON when it is not JSON)."""
    if source.is_webhook:
        uid = source.uid
        events = [SourceEvent(WEBHOOK, uid, payload, (WEBHOOK, uid))]
    elif payload is NOT_JSON:
        events = []
    else:
        found = normalize(source.kind, headers, payload, source.bot)
        events = [SourceEvent(e.provider, e.event, e.values, route_of(e), e) for e in found]
    return NormalizedDelivery(source, payload, headers, events)
