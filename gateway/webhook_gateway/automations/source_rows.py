"""What the one trigger index (`trigger_index.py`) reads of the store, per kind of source: the
only part of it that differs, because the two kinds' configuration lives in different tables.

- Live sources: a custom webhook (enabled, not deleted, with its factory's team) is its own
  scope; a provider connection's scope is its team.
- Signatures: per scope, a digest of what its compiled triggers depend on (a webhook's: its
  listening automations' (uid, updated_at) and its factory's foreman; a team's: the (uid,
  updated_at) of its enabled automations with a trigger other than a webhook's, their
  factories' foremen and repositories, and its factories' aliases). An entry whose signature
  stands after a configuration change is kept, not compiled again.
- Triggers: per scope, each trigger as (route, automation, position, filter): a webhook's
  payload filters filed under the webhook's route, run by the factory's foreman; a team's
  provider triggers filed under (provider, event) or, for GitHub and GitLab, one route per
  repository its factory lists, run by the automation's agent, else the foreman.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import msgspec
from sqlalchemy import func, select, type_coerce
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import NullType

from factory_format import Trigger as CanonicalTrigger
from filters import Filter, FilterError, parse_filter
from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.automations.source_events import (
    ROUTED,
    WEBHOOK,
    LiveSource,
    Route,
    webhook_route,
)
from gateway.webhook_gateway.providers import (
    PROVIDERS,
    EventMatcher,
    TriggerFilterError,
    compile_trigger_filter,
    repository_key,
)
from gateway.webhook_gateway.providers.values import names_key

log = logging.getLogger("gateway.automations")

CHUNK = 500  # keys per IN (...) list
_PROVIDERS = frozenset(PROVIDERS)
# automations.updated_at as the driver returns it (a string on SQLite): the signatures compare it,
# and skipping the type's result processing keeps reading them cheap
STAMP = type_coerce(t.automations.c.updated_at, NullType()).label("stamp")


class TriggerRow(NamedTuple):
    """One compiled trigger of a scope: the route it is filed under, its automation (uid, factory,
    team, agent that runs it, updated_at as `stamp_micros`), its position in the automation's
    triggers, the filter the index's MultiMatcher holds and what is checked after it (a
    provider trigger's keywords and path globs; None: nothing)."""

    route: Route
    uid: str
    factory_uid: str
    team_uid: str
    agent_uid: str | None
    stamp: int
    position: int
    equality: Filter | None
    after: Any


class Compiled(NamedTuple):
    triggers: list[TriggerRow]
    aliases: dict[str, str]  # factory uid -> alias (`@<alias>` continues its work item)


def stamp_micros(raw: Any) -> int:
    """An automation's updated_at as read through STAMP (text on SQLite, a datetime on
    PostgreSQL) in microseconds since the epoch: an int packs small where the text took ~75
    bytes, and compares the same on both drivers."""
    when = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return (when - _EPOCH) // _MICROSECOND


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


async def config_revision(conn: AsyncConnection) -> int:
    query = select(t.config_revision.c.value).where(t.config_revision.c.id == 1)
    return int((await conn.execute(query)).scalar_one())


def chunks(keys: Iterable[str]) -> Iterable[list[str]]:
    ordered = sorted(keys)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]


def _digest(parts: Any) -> bytes:
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()


async def live_sources(
    conn: AsyncConnection, uids: Sequence[str], shared: dict[str, str]
) -> dict[str, LiveSource]:
    """The live ones of these sources. `shared`: one string per team, however many name it."""
    found: dict[str, LiveSource] = {}
    hooks = [uid for uid in uids if not ids.is_connection(uid)]
    w, f, c = t.webhooks, t.factories, t.provider_connections
    for chunk in chunks(hooks):
        query = (
            select(w.c.uid, w.c.name, f.c.team_uid)
            .join(f, f.c.uid == w.c.factory_uid)
            .where(w.c.uid.in_(chunk), w.c.deleted_at.is_(None), w.c.enabled)
        )
        for uid, name, team_uid in await conn.execute(query):
            team_uid = shared.setdefault(team_uid, team_uid)
            found[uid] = LiveSource(uid, name, WEBHOOK, team_uid, uid)
    for chunk in chunks(uid for uid in uids if ids.is_connection(uid)):
        query = select(c.c.uid, c.c.name, c.c.provider, c.c.team_uid, c.c.bot).where(
            c.c.uid.in_(chunk), c.c.enabled, c.c.deleted_at.is_(None)
        )
        for row in await conn.execute(query):
            team = shared.setdefault(row.team_uid, row.team_uid)
            found[row.uid] = LiveSource(row.uid, row.name, row.provider, team, team, row.bot)
    return found


async def signatures(conn: AsyncConnection, scopes: Sequence[LiveSource]) -> dict[str, bytes]:
    """Per scope (a webhook's uid, a team's), the digest its compiled triggers are kept by."""
    parts: dict[str, list[Any]] = {s.scope: [] for s in scopes}
    a, tr, f = t.automations, t.automation_triggers, t.factories
    for chunk in chunks(s.scope for s in scopes if s.is_webhook):
        joined, where = _webhook_triggers(chunk)
        query = select(tr.c.webhook_uid, a.c.uid, STAMP, f.c.foreman_agent_uid)
        for webhook_uid, *rest in await conn.execute(query.select_from(joined).where(*where)):
            parts[webhook_uid].append(rest)
    for chunk in chunks({s.scope for s in scopes if not s.is_webhook}):
        columns = (a.c.uid, STAMP, f.c.uid, f.c.foreman_agent_uid, f.c.repositories)
        for team_uid, *rest in await conn.execute(_team_query(chunk, *columns)):
            parts[team_uid].append(rest)
        for team_uid, factory_uid, alias in await conn.execute(_aliases_query(chunk)):
            parts[team_uid].append([factory_uid, alias])
    # the order of the rows does not matter, only what they hold
    return {scope: _digest(sorted(map(repr, found))) for scope, found in parts.items()}


async def compiled(conn: AsyncConnection, scopes: Sequence[LiveSource]) -> dict[str, Compiled]:
    """Per scope, its triggers of enabled automations in automation creation order."""
    found = {s.scope: Compiled([], {}) for s in scopes}
    await _webhook_rows(conn, [s.scope for s in scopes if s.is_webhook], found)
    await _team_rows(conn, list({s.scope for s in scopes if not s.is_webhook}), found)
    return found


# --- custom webhooks ------------------------------------------------------------------------


def _webhook_triggers(hooks: list[str]) -> tuple[Any, tuple[Any, ...]]:
    """Triggers on these webhooks of enabled automations of the webhook's factory."""
    a, tr, w, f = t.automations, t.automation_triggers, t.webhooks, t.factories
    return (
        a.join(tr, tr.c.automation_uid == a.c.uid)
        .join(w, w.c.uid == tr.c.webhook_uid)
        .join(f, f.c.uid == w.c.factory_uid),
        (tr.c.webhook_uid.in_(hooks), a.c.enabled, a.c.factory_uid == w.c.factory_uid),
    )


async def _webhook_rows(
    conn: AsyncConnection, webhook_uids: Sequence[str], found: dict[str, Compiled]
) -> None:
    """A webhook's runs go to its factory's foreman (none: no run can start)."""
    a, tr, f = t.automations, t.automation_triggers, t.factories
    shared: dict[str, str] = {}  # one string per uid, however many triggers name it
    for chunk in chunks(webhook_uids):
        joined, where = _webhook_triggers(chunk)
        columns = (tr.c.webhook_uid, a.c.uid, tr.c.position, tr.c.payload_filter, STAMP)
        query: Any = (
            select(*columns, f.c.uid.label("factory_uid"), f.c.team_uid, f.c.foreman_agent_uid)
            .select_from(joined)
            .where(*where)
            .order_by(tr.c.webhook_uid, a.c.created_at, a.c.uid, tr.c.position)
        )
        for row in await conn.execute(query):
            try:
                tree = parse_filter(row.payload_filter or {})
            except FilterError as exc:  # validated on write; a stored fault must not stop others
                log.error("automation %s trigger %d: bad filter: %s", row.uid, row.position, exc)
                continue
            uid = shared.setdefault(row.uid, row.uid)
            factory, team = shared.setdefault(row.factory_uid, row.factory_uid), row.team_uid
            agent = row.foreman_agent_uid
            agent = agent if agent is None else shared.setdefault(agent, agent)
            route = webhook_route(row.webhook_uid)
            stamp = stamp_micros(row.stamp)
            entry = TriggerRow(route, uid, factory, team, agent, stamp, row.position, tree, None)
            found[row.webhook_uid].triggers.append(entry)


# --- provider connections: per team ----------------------------------------------------------


def _team_query(team_uids: Sequence[str], *columns: Any) -> Any:
    """The team's enabled automations that have a trigger other than a webhook's: fewer
    triggers in automation_triggers (which indexes the webhook ones) than in `triggers`. A
    team's webhook automations (10,000 webhooks of 10: 100,000 of them) are not read and
    parsed for its provider triggers."""
    a, f, tr = t.automations, t.factories, t.automation_triggers
    webhook_triggers = select(func.count()).where(tr.c.automation_uid == a.c.uid).scalar_subquery()
    return (
        select(f.c.team_uid, *columns)
        .join(f, f.c.uid == a.c.factory_uid)
        .where(
            f.c.team_uid.in_(team_uids),
            a.c.enabled,
            func.json_array_length(a.c.triggers) > webhook_triggers,
        )
        .order_by(f.c.team_uid, a.c.created_at, a.c.uid)
    )


def _aliases_query(team_uids: Sequence[str]) -> Any:
    """The aliases of the team's factories that have an enabled automation, of any kind (a
    mention continues a factory's work items whatever its automations listen to)."""
    a, f = t.automations, t.factories
    enabled = select(a.c.uid).where(a.c.factory_uid == f.c.uid, a.c.enabled).exists()
    return (
        select(f.c.team_uid, f.c.uid, f.c.alias)
        .where(f.c.team_uid.in_(team_uids), f.c.alias.is_not(None), enabled)
        .order_by(f.c.team_uid, f.c.uid)
    )


async def _team_rows(
    conn: AsyncConnection, team_uids: Sequence[str], found: dict[str, Compiled]
) -> None:
    a, f = t.automations, t.factories
    columns = (
        *(a.c.uid, a.c.factory_uid, a.c.triggers, a.c.agent_uid, STAMP),
        *(f.c.foreman_agent_uid, f.c.repositories),
    )
    for chunk in chunks(team_uids):
        for team_uid, factory_uid, alias in await conn.execute(_aliases_query(chunk)):
            if isinstance(alias, str) and alias.strip():
                found[team_uid].aliases[factory_uid] = alias.strip()
        for row in await conn.execute(_team_query(chunk, *columns)):
            into = found[row.team_uid]
            agent = row.agent_uid or row.foreman_agent_uid
            stamp = stamp_micros(row.stamp)
            repositories = repository_keys(row.repositories)
            for position, trigger in provider_triggers(row.uid, row.triggers):
                matcher = provider_matcher(row.uid, position, trigger)
                if matcher is None:
                    continue
                for route in _routes(trigger, repositories):
                    into.triggers.append(
                        TriggerRow(
                            route,
                            row.uid,
                            row.factory_uid,
                            row.team_uid,
                            agent,
                            stamp,
                            position,
                            matcher.equality,
                            matcher.after,
                        )
                    )


def _routes(trigger: CanonicalTrigger, repositories: Sequence[str]) -> list[Route]:
    if trigger.provider in ROUTED:
        return [(trigger.provider, trigger.event, repo) for repo in repositories]
    return [(trigger.provider, trigger.event)]


def provider_triggers(automation_uid: str, stored: Any) -> list[tuple[int, CanonicalTrigger]]:
    """(position, trigger) of an automation's triggers of connection providers."""
    try:
        triggers = msgspec.convert(stored, list[CanonicalTrigger])
    except msgspec.ValidationError as exc:
        log.error("automation %s: unreadable triggers: %s", automation_uid, exc)
        return []
    return [(i, trigger) for i, trigger in enumerate(triggers) if trigger.provider in _PROVIDERS]


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


def provider_matcher(
    automation_uid: str, position: int, trigger: CanonicalTrigger
) -> EventMatcher | None:
    try:
        return compile_trigger_filter(trigger.provider, plain_filter(trigger), trigger.event)
    except TriggerFilterError as exc:  # validated on write; a stored fault must not stop others
        log.error("automation %s trigger %d: bad filter: %s", automation_uid, position, exc)
        return None


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
