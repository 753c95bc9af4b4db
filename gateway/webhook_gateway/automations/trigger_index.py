"""The evaluator's one index of every source's triggers: what a batch of deliveries, to custom
webhooks and provider connections alike, is matched against.

A delivery is matched as the `SourceEvent`s it normalizes to (`source_events.py`). Each
source's triggers are compiled per scope (a custom webhook's: its own; a provider connection's:
its team's, whose every factory it serves) into `Listeners`: per route (`(webhook, uid)`;
`(provider, event)`; `(provider, event, repository)` for GitHub and GitLab, which reach only the
factories listing the repository) the triggers filed there, their filters indexed together
(filters' MultiMatcher: a delivery runs the checks of the triggers its values can satisfy, not
all of them). An event then finds its candidates with one dict access and runs only those.

The index is checked against the store's config revision (one row, bumped by triggers on every
configuration change), read once per batch: while it stands, a batch reads nothing else. After
a change, the sources are read again, and each cached scope is checked once more by a signature
of what it was compiled from (`source_rows.signatures`), when a delivery next needs it: only the
ones that changed are read and compiled again. What is read per kind is `source_rows.py`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from filters import Filter, MultiMatcher, compile_many
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.webhook_gateway.automations.prompts import Automation, Prompts
from gateway.webhook_gateway.automations.source_events import LiveSource, SourceEvent
from gateway.webhook_gateway.automations.source_events import Route as RouteKey
from gateway.webhook_gateway.automations.source_rows import (
    Compiled,
    compiled,
    config_revision,
    live_sources,
    signatures,
)

# ~3 kB per scope of 10 automations: a store of 10,000 busy webhooks and teams stays cached
MAX_CACHED_SCOPES = 20_480
MAX_CACHED_SOURCES = 81_920
WARM_UP_CHUNK = 1_000  # webhooks per read at start-up


class WarmedUp(NamedTuple):
    """What `TriggerIndex.warm_up` compiled: webhooks, and teams of provider connections."""

    webhooks: int
    teams: int


@dataclass(frozen=True, slots=True, eq=False)
class SourceAutomation:
    """An enabled automation as matching needs it (its name, prompt and runs' configuration
    come from `prompts.Prompts`). One object per automation per compilation, compared and hashed
    by identity: traces are cached by the tuples of them a delivery considered."""

    uid: str
    factory_uid: str
    team_uid: str
    agent_uid: str | None  # who runs it (a webhook's: its factory's foreman); None: nobody
    stamp: int  # updated_at (`stamp_micros`)


# one trigger: its automation, what is checked after the index's filter (a provider trigger's
# keywords and path globs; None: nothing), and that filter
Trigger = tuple[SourceAutomation, Any, Filter | None]


class Route(NamedTuple):
    """What one route reaches: per trigger that may match, its automation (`candidates`) and
    what is checked after the index's filter (`afters`; None: nothing for any), and the
    automations they belong to, each once, in order (those an outcome trace considers; the
    same tuple when no automation has two triggers there: a cached webhook's entry is kept
    small, the process holds one per webhook)."""

    candidates: tuple[SourceAutomation, ...]
    afters: tuple[Any, ...] | None
    automations: tuple[SourceAutomation, ...]
    equality: MultiMatcher[int]

    @classmethod
    def of(cls, triggers: Sequence[Trigger]) -> Route:
        candidates = tuple(automation for automation, _after, _filter in triggers)
        distinct = tuple(dict.fromkeys(candidates))
        automations = candidates if len(distinct) == len(candidates) else distinct
        afters = tuple(after for _a, after, _filter in triggers)
        matcher = compile_many([(i, tree) for i, (_a, _after, tree) in enumerate(triggers)])
        checked = afters if any(after is not None for after in afters) else None
        return cls(candidates, checked, automations, matcher)

    def hits(self, values: Any, into: dict[str, SourceAutomation]) -> None:
        candidates, afters = self.candidates, self.afters
        for i in self.equality.match(values):
            automation = candidates[i]
            if automation.uid in into:
                continue
            after = None if afters is None else afters[i]
            if after is None or after(values):
                into[automation.uid] = automation


NO_ROUTE = Route.of(())
_NO_ALIASES: dict[str, str] = {}  # shared by the scopes without any (every webhook's)


@dataclass(frozen=True, slots=True)
class Listeners:
    """A scope's triggers at config revision `revision`."""

    scope: str
    signature: bytes
    revision: int
    routes: dict[RouteKey, Route]
    # factory uid -> its alias, for the factories with aliases: `@<alias>` in a comment or
    # message continues that factory's work item (evaluator/work_item_plans.py)
    aliases: dict[str, str]

    def at(self, revision: int) -> Listeners:
        return Listeners(self.scope, self.signature, revision, self.routes, self.aliases)

    def route(self, event: SourceEvent) -> Route:
        key = event.route
        return NO_ROUTE if key is None else self.routes.get(key, NO_ROUTE)

    def match(self, events: Sequence[SourceEvent]) -> tuple[list[SourceAutomation], Route]:
        """The automations `events` start (each once, however many of its triggers match),
        and what was considered (the route of a one-event delivery, else their union)."""
        hits: dict[str, SourceAutomation] = {}
        if len(events) == 1:  # a webhook's delivery, most providers' (kept short: per delivery)
            event = events[0]
            key = event.route
            route = NO_ROUTE if key is None else self.routes.get(key, NO_ROUTE)
            if route.candidates:
                route.hits(event.values, hits)
            return list(hits.values()), route
        routes = [self.route(event) for event in events]
        for event, route in zip(events, routes, strict=True):
            route.hits(event.values, hits)
        considered = tuple(dict.fromkeys(a for r in routes for a in r.automations))
        return list(hits.values()), NO_ROUTE._replace(automations=considered)


@dataclass(slots=True)
class Sources:
    """A batch's sources as the index holds them: the live ones, and their scopes' triggers."""

    live: dict[str, LiveSource]
    listeners: dict[str, Listeners]


class TriggerIndex:
    def __init__(self) -> None:
        self._sources: dict[str, LiveSource | None] = {}  # at config revision `_revision`
        self._scopes: OrderedDict[str, Listeners] = OrderedDict()
        self._names: dict[str, str] = {}  # team uids, each one string
        self._revision = -1
        self.prompts = Prompts()
        self.compilations = 0

    async def lookup(self, conn: AsyncConnection, source_uids: Iterable[str]) -> Sources:
        """What these sources' deliveries are matched against, at the current revision."""
        revision = await config_revision(conn)
        if revision != self._revision:
            self._sources.clear()
            self._revision = revision
        wanted = set(source_uids)
        unknown = [uid for uid in wanted if uid not in self._sources]
        if unknown:
            if len(self._sources) + len(unknown) > MAX_CACHED_SOURCES:
                self._sources.clear()
            if len(self._names) > MAX_CACHED_SCOPES:
                self._names.clear()
            read = await live_sources(conn, unknown, self._names)
            for uid in unknown:
                self._sources[uid] = read.get(uid)
        live = {uid: s for uid in wanted if (s := self._sources.get(uid)) is not None}
        return Sources(live, await self._listeners(conn, live.values(), revision))

    async def _listeners(
        self, conn: AsyncConnection, sources: Iterable[LiveSource], revision: int
    ) -> dict[str, Listeners]:
        found: dict[str, Listeners] = {}
        unsure: dict[str, LiveSource] = {}
        for source in sources:
            scope = source.scope
            if scope in found or scope in unsure:
                continue
            entry = self._scopes.get(scope)
            if entry is not None and entry.revision == revision:
                self._scopes.move_to_end(scope)
                found[scope] = entry
            else:
                unsure[scope] = source
        if not unsure:
            return found
        digests = await signatures(conn, list(unsure.values()))
        stale: list[LiveSource] = []
        for scope, source in unsure.items():
            entry = self._scopes.get(scope)
            if entry is not None and entry.signature == digests[scope]:
                found[scope] = self._keep(entry.at(revision))
            else:
                stale.append(source)
        if stale:
            for scope, rows in (await compiled(conn, stale)).items():
                found[scope] = self._keep(self._compile(scope, digests[scope], revision, rows))
        return found

    def _keep(self, entry: Listeners) -> Listeners:
        self._scopes[entry.scope] = entry
        self._scopes.move_to_end(entry.scope)
        while len(self._scopes) > MAX_CACHED_SCOPES:
            self._scopes.popitem(last=False)
        return entry

    def _compile(self, scope: str, signature: bytes, revision: int, rows: Compiled) -> Listeners:
        self.compilations += 1
        automations: dict[str, SourceAutomation] = {}
        routes: dict[RouteKey, list[Trigger]] = {}
        for row in rows.triggers:
            automation = automations.get(row.uid)
            if automation is None:
                automation = automations[row.uid] = SourceAutomation(
                    row.uid, row.factory_uid, row.team_uid, row.agent_uid, row.stamp
                )
            routes.setdefault(row.route, []).append((automation, row.after, row.equality))
        built = {key: Route.of(found) for key, found in routes.items()}
        return Listeners(scope, signature, revision, built, rows.aliases or _NO_ALIASES)

    async def automations(
        self, conn: AsyncConnection, wanted: dict[str, int]
    ) -> dict[str, Automation]:
        """Name, prompt and runs' configuration of each automation uid in `wanted` (uid ->
        updated_at stamp), whatever its source."""
        return await self.prompts.automations(conn, wanted)

    async def warm_up(self, database: Database) -> WarmedUp:
        """Reads and compiles the triggers of the store's live webhooks (the most recently
        updated first, as many as are cached) and of the teams of its live provider
        connections, before the first delivery needs them: else the first minute after a start
        spends its CPU compiling the filters of every source seen for the first time, and
        evaluation lags behind (a team's provider triggers were compiled at its first
        delivery, holding that delivery's whole batch)."""
        w, c = t.webhooks, t.provider_connections
        hooks = (
            select(w.c.uid)
            .where(w.c.deleted_at.is_(None), w.c.enabled)
            .order_by(w.c.updated_at.desc())
            .limit(MAX_CACHED_SCOPES)
        )
        # one live connection per team: its team's scope is every connection's of the team
        teams = (
            select(func.min(c.c.uid))
            .where(c.c.deleted_at.is_(None), c.c.enabled)
            .group_by(c.c.team_uid)
            .limit(MAX_CACHED_SCOPES)
        )
        async with database.read() as conn:
            webhook_uids = list((await conn.execute(hooks)).scalars())
            connection_uids = list((await conn.execute(teams)).scalars())
        for uids, chunk in ((webhook_uids, WARM_UP_CHUNK), (connection_uids, 1)):
            for start in range(0, len(uids), chunk):  # short reads: writers get their turns
                async with database.read() as conn:
                    await self.lookup(conn, uids[start : start + chunk])
                await asyncio.sleep(0)
        return WarmedUp(len(webhook_uids), len(connection_uids))

    def cached(self, source_uid: str) -> bool:
        """Whether a live source's triggers are compiled at the current revision."""
        source = self._sources.get(source_uid)
        entry = None if source is None else self._scopes.get(source.scope)
        return entry is not None and entry.revision == self._revision
