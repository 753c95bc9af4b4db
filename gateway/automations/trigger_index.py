"""The evaluator's one index of every source's triggers: what a batch of deliveries, to custom
webhooks and provider connections alike, is matched against.

A custom webhook's triggers are its factory's automations' payload filters, compiled per
webhook (`index.AutomationIndex`, which also keeps every automation's name, prompt and runs'
configuration); a provider connection's are the provider triggers of its team's automations,
compiled per team (`provider_index.ProviderIndex`). Both are checked against the store's one
config revision, read once per batch here: while it stands, a batch reads nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.automations.index import Automation, AutomationIndex, HookAutomations, config_revision
from gateway.automations.provider_index import LiveConnection, ProviderIndex, TeamTriggers
from gateway.store import Database


@dataclass(slots=True)
class Sources:
    """A batch's sources as the index holds them: the live ones (a webhook's entry says
    whether it is live) and the triggers of the connections' teams."""

    hooks: dict[str, HookAutomations] = field(default_factory=dict)
    connections: dict[str, LiveConnection] = field(default_factory=dict)
    teams: dict[str, TeamTriggers] = field(default_factory=dict)


class TriggerIndex:
    def __init__(self) -> None:
        self.webhooks = AutomationIndex()
        self.providers = ProviderIndex()

    @property
    def compilations(self) -> int:
        return self.webhooks.compilations + self.providers.compilations

    async def lookup(self, conn: AsyncConnection, source_uids: Iterable[str]) -> Sources:
        """What these sources' deliveries are matched against, at the current revision."""
        revision = await config_revision(conn)
        hooks = set(source_uids)
        connections = {uid for uid in hooks if ids.is_connection(uid)}
        hooks -= connections
        found = Sources()
        if hooks:
            found.hooks = await self.webhooks.lookup(conn, hooks, revision)
        if connections:
            _, found.connections = await self.providers.connections(conn, connections, revision)
            teams = {c.team_uid for c in found.connections.values()}
            found.teams = await self.providers.teams(conn, teams, revision)
        return found

    async def automations(
        self, conn: AsyncConnection, wanted: dict[str, int]
    ) -> dict[str, Automation]:
        """Name, prompt and runs' configuration of each automation uid in `wanted` (uid ->
        updated_at stamp), whatever its source."""
        return await self.webhooks.automations(conn, wanted)

    async def warm_up(self, database: Database) -> int:
        """Compiles the live webhooks' automations ahead of their first deliveries (a team's
        provider triggers are compiled at its first delivery). How many webhooks it read."""
        return await self.webhooks.warm_up(database)
