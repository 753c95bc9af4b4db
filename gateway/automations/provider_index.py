"""The evaluator's view of provider triggers (`github` / `issue_labeled`, `slack` /
`reaction_added`, ...), cached between batches beside the webhook index (`index.py`).

A provider connection serves every factory of its team, so the triggers are compiled per team:
every provider trigger of the enabled automations of the team's factories, its filter compiled
once (`gateway.providers.compile_trigger_filter`) and filed under what can reach it: (provider,
event) for Slack, Linear and Jira, and (provider, event, repository) for GitHub and GitLab, one
entry per repository the trigger's factory lists (an event reaches only those factories). A
delivery's events then look up their candidates with one dict access each and run only those
matchers.

Like the webhook index, it is checked against the store's config revision: while it stands, a
batch reads nothing; after a change, a team's entry is checked once more by a signature of its
automations (uid, updated_at) and factories (uid, foreman, repositories), and compiled again
only when that changed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from factory_format import Trigger as CanonicalTrigger
from filters import MultiMatcher, compile_many
from gateway.automations.index import STAMP, chunks, config_revision, stamp_micros
from gateway.providers import (
    PROVIDERS,
    EventMatcher,
    TriggerEvent,
    TriggerFilterError,
    compile_trigger_filter,
    repository_key,
)
from gateway.providers.values import names_key
from gateway.store import tables as t
from gateway.types import JsonObject

log = logging.getLogger("gateway.automations")

# GitHub and GitLab events reach only the factories whose repositories list their repository
ROUTED = frozenset({"github", "gitlab"})
_PROVIDERS = frozenset(PROVIDERS)
MAX_CACHED_TEAMS = 4_096
MAX_CACHED_CONNECTIONS = 65_536


@dataclass(frozen=True, slots=True)
class LiveConnection:
    """An enabled, not deleted provider connection: the team it serves, as which bot."""

    uid: str
    name: str
    provider: str
    team_uid: str
    bot: str | None


@dataclass(frozen=True, slots=True, eq=False)
class ProviderAutomation:
    """An enabled automation with provider triggers, as matching needs it (its name, prompt and
    runs' configuration come from the webhook index's prompt cache,
    `AutomationIndex.automations`). One object per automation per compilation, compared and
    hashed by identity."""

    uid: str
    factory_uid: str
    team_uid: str
    agent_uid: str | None  # its own agent, else the factory's foreman; None: neither
    stamp: int  # updated_at (`stamp_micros`)


class Candidate(NamedTuple):
    """One trigger: the automation, the trigger's position in its triggers, the matcher."""

    automation: ProviderAutomation
    position: int
    matcher: EventMatcher


class Route(NamedTuple):
    """What one (provider, event[, repository]) reaches: the triggers that may match, and the
    automations they belong to, each once, in order (those an outcome trace considers).
    `equality` indexes the triggers' equality filters by the values they name (filters'
    MultiMatcher: a delivery runs the checks of the triggers its values can satisfy, not all
    of them); a trigger with `keywords` or `paths` is checked for them after."""

    candidates: tuple[Candidate, ...]
    automations: tuple[ProviderAutomation, ...]
    equality: MultiMatcher[int]

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> Route:
        matchers = [(i, c.matcher.equality) for i, c in enumerate(candidates)]
        automations = tuple(dict.fromkeys(c.automation for c in candidates))
        return cls(tuple(candidates), automations, compile_many(matchers))


_NO_ROUTE = Route.of(())


@dataclass(frozen=True, slots=True)
class TeamTriggers:
    """A team's provider triggers at config revision `revision`."""

    team_uid: str
    signature: bytes
    revision: int
    routes: dict[tuple[str, ...], Route]
    # factory uid -> its alias, for the factories with aliases: `@<alias>` in a comment or
    # message continues that factory's work item (evaluator/work_item_plans.py)
    aliases: dict[str, str]

    def _replace_revision(self, revision: int) -> TeamTriggers:
        return TeamTriggers(self.team_uid, self.signature, revision, self.routes, self.aliases)

    def route(self, event: TriggerEvent) -> Route:
        """The triggers that can match `event` (a GitHub or GitLab event: only those of the
        factories listing its repository)."""
        if event.provider in ROUTED:
            repos = event.values.get("repos")
            if not repos:
                return _NO_ROUTE
            return self.routes.get((event.provider, event.event, repos[0]), _NO_ROUTE)  # type: ignore[arg-type]
        return self.routes.get((event.provider, event.event), _NO_ROUTE)

    def match(self, events: Sequence[TriggerEvent]) -> tuple[list[ProviderAutomation], Route]:
        """The automations `events` start (each once, however many of its triggers match),
        and what was considered (the route of a one-event delivery, else their union)."""
        if len(events) == 1:
            route = self.route(events[0])
            return self._hits(events, (route,)), route
        routes = tuple(self.route(event) for event in events)
        considered = tuple(dict.fromkeys(a for r in routes for a in r.automations))
        return self._hits(events, routes), _NO_ROUTE._replace(automations=considered)

    @staticmethod
    def _hits(events: Sequence[TriggerEvent], routes: Sequence[Route]) -> list[ProviderAutomation]:
        hits: dict[str, ProviderAutomation] = {}
        for event, route in zip(events, routes, strict=True):
            candidates = route.candidates
            for i in route.equality.match(event.values):
                automation, _position, matcher = candidates[i]
                after = matcher.after  # keywords, path globs: what the index cannot answer
                if automation.uid not in hits and (after is None or after(event.values)):
                    hits[automation.uid] = automation
        return list(hits.values())


class ProviderIndex:
    def __init__(self) -> None:
        self._teams: dict[str, TeamTriggers] = {}
        # connection uid -> live connection (None: not live) at config revision `_revision`
        self._connections: dict[str, LiveConnection | None] = {}
        self._revision = -1
        self.compilations = 0

    async def connections(
        self, conn: AsyncConnection, uids: Iterable[str], revision: int | None = None
    ) -> tuple[int, dict[str, LiveConnection]]:
        """The config revision (unless given, as read through `conn`), and the live ones of
        these connections: cached while the revision stands (a batch then reads that row and
        nothing else), read again after a change."""
        if revision is None:
            revision = await config_revision(conn)
        if revision != self._revision:
            self._connections.clear()
            self._revision = revision
        wanted = set(uids)
        unknown = [uid for uid in wanted if uid not in self._connections]
        if unknown:
            if len(self._connections) + len(unknown) > MAX_CACHED_CONNECTIONS:
                self._connections.clear()
            read = await _live_connections(conn, unknown)
            for uid in unknown:
                self._connections[uid] = read.get(uid)
        found = {uid: c for uid in wanted if (c := self._connections.get(uid)) is not None}
        return revision, found

    async def teams(
        self, conn: AsyncConnection, team_uids: Iterable[str], revision: int
    ) -> dict[str, TeamTriggers]:
        """Every given team's triggers at config `revision` (as `connections` read it):
        compiled before and unchanged since, or read and compiled again."""
        found: dict[str, TeamTriggers] = {}
        unsure: list[str] = []
        for uid in set(team_uids):
            entry = self._teams.get(uid)
            if entry is not None and entry.revision == revision:
                found[uid] = entry
            else:
                unsure.append(uid)
        if unsure:
            signatures = await _signatures(conn, unsure)
            stale = []
            for uid in unsure:
                entry = self._teams.get(uid)
                if entry is not None and entry.signature == signatures[uid]:
                    found[uid] = self._keep(entry._replace_revision(revision))
                else:
                    stale.append(uid)
            rows = await _automation_rows(conn, stale) if stale else {}
            for uid in stale:
                team_rows = rows.get(uid, [])
                routes = self._compile(team_rows)
                aliases = {r.factory_uid: r.alias.strip() for r in team_rows if _alias(r.alias)}
                found[uid] = self._keep(
                    TeamTriggers(uid, signatures[uid], revision, routes, aliases)
                )
        return found

    def _keep(self, entry: TeamTriggers) -> TeamTriggers:
        team_uid = entry.team_uid
        if team_uid not in self._teams and len(self._teams) >= MAX_CACHED_TEAMS:
            self._teams.pop(next(iter(self._teams)))
        self._teams[team_uid] = entry
        return entry

    def _compile(self, rows: Sequence[Any]) -> dict[tuple[str, ...], Route]:
        self.compilations += 1
        candidates: dict[tuple[str, ...], list[Candidate]] = {}
        for row in rows:
            triggers = _provider_triggers(row)
            if not triggers:
                continue
            automation = ProviderAutomation(
                uid=row.uid,
                factory_uid=row.factory_uid,
                team_uid=row.team_uid,
                agent_uid=row.agent_uid or row.foreman_agent_uid,
                stamp=stamp_micros(row.stamp),
            )
            repositories = repository_keys(row.repositories)
            for position, trigger in triggers:
                matcher = _matcher(row.uid, position, trigger)
                if matcher is None:
                    continue
                candidate = Candidate(automation, position, matcher)
                for key in _route_keys(trigger, repositories):
                    candidates.setdefault(key, []).append(candidate)
        return {key: Route.of(found) for key, found in candidates.items()}


async def _live_connections(
    conn: AsyncConnection, uids: Sequence[str]
) -> dict[str, LiveConnection]:
    c = t.provider_connections
    found: dict[str, LiveConnection] = {}
    for chunk in chunks(uids):
        query = select(c.c.uid, c.c.name, c.c.provider, c.c.team_uid, c.c.bot).where(
            c.c.uid.in_(chunk), c.c.enabled, c.c.deleted_at.is_(None)
        )
        for row in await conn.execute(query):
            found[row.uid] = LiveConnection(*row)
    return found


def plain_filter(trigger: CanonicalTrigger) -> JsonObject:
    """A canonical trigger's filter as `compile_trigger_filter` reads it: `{in, not_in}` per
    key, a by-name matcher on the names the events carry beside the ids (`names_key`)."""
    return {
        (names_key(key) if matcher.by_name else key): {
            "in": list(matcher.in_),
            "not_in": list(matcher.not_in),
        }
        for key, matcher in trigger.filter.items()
    }


def _matcher(automation_uid: str, position: int, trigger: CanonicalTrigger) -> EventMatcher | None:
    try:
        return compile_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    except TriggerFilterError as exc:  # validated on write; a stored fault must not stop others
        log.error("automation %s trigger %d: bad filter: %s", automation_uid, position, exc)
        return None


def _route_keys(trigger: CanonicalTrigger, repositories: Sequence[str]) -> list[tuple[str, ...]]:
    if trigger.provider in ROUTED:
        return [(trigger.provider, trigger.event, repo) for repo in repositories]
    return [(trigger.provider, trigger.event)]


def _provider_triggers(row: Any) -> list[tuple[int, CanonicalTrigger]]:
    """(position, trigger) of the row's triggers of connection providers."""
    try:
        triggers = msgspec.convert(row.triggers, list[CanonicalTrigger])
    except msgspec.ValidationError as exc:
        log.error("automation %s: unreadable triggers: %s", row.uid, exc)
        return []
    return [(i, trigger) for i, trigger in enumerate(triggers) if trigger.provider in _PROVIDERS]


def _alias(alias: Any) -> bool:
    return isinstance(alias, str) and bool(alias.strip())


def repository_keys(stored: Any) -> list[str]:
    """A factory's `repositories` ([{owner, name}]) in the form events carry."""
    if not isinstance(stored, list):
        return []
    keys = (
        repository_key(item["owner"], item["name"])
        for item in stored
        if isinstance(item, dict)
        and isinstance(item.get("owner"), str)
        and isinstance(item.get("name"), str)
    )
    return list(dict.fromkeys(keys))


def _team_query(team_uids: Sequence[str], *columns: Any) -> Any:
    a, f = t.automations, t.factories
    return (
        select(f.c.team_uid, *columns)
        .join(f, f.c.uid == a.c.factory_uid)
        .where(f.c.team_uid.in_(team_uids), a.c.enabled)
        .order_by(f.c.team_uid, a.c.created_at, a.c.uid)
    )


async def _signatures(conn: AsyncConnection, team_uids: Sequence[str]) -> dict[str, bytes]:
    """Per team, a digest of what its compiled triggers depend on."""
    a, f = t.automations, t.factories
    parts: dict[str, list[Any]] = {uid: [] for uid in team_uids}
    for chunk in chunks(team_uids):
        query = _team_query(
            chunk, a.c.uid, STAMP, f.c.uid, f.c.foreman_agent_uid, f.c.repositories, f.c.alias
        )
        for team_uid, *rest in await conn.execute(query):
            parts[team_uid].append(rest)
    return {
        uid: hashlib.blake2b(repr(found).encode(), digest_size=16).digest()
        for uid, found in parts.items()
    }


async def _automation_rows(conn: AsyncConnection, team_uids: Sequence[str]) -> dict[str, list[Any]]:
    """Per team, its enabled automations with what compiling their triggers needs, in creation
    order."""
    a, f = t.automations, t.factories
    columns = (
        *(a.c.uid, a.c.factory_uid, a.c.triggers, a.c.agent_uid, STAMP),
        *(f.c.foreman_agent_uid, f.c.repositories, f.c.alias),
    )
    found: dict[str, list[Any]] = {}
    for chunk in chunks(team_uids):
        for row in await conn.execute(_team_query(chunk, *columns)):
            found.setdefault(row.team_uid, []).append(row)
    return found
