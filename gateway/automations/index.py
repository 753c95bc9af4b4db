"""The evaluator's view of the configuration, cached between batches.

Per webhook: whether it is live (enabled, not deleted) with its factory, and the compiled
filters of its enabled automations; per automation that starts runs: its name, prompt, agent
and its runs' configuration. All of it is kept across batches and checked against the store's
config revision (one row, bumped by triggers on every configuration change): while the revision
stands, a batch reads nothing but that row. After a change, each cached webhook is checked once
more, by its automations' (uid, updated_at) signature, when a delivery next needs it; only the
ones that changed are read and compiled again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row, select, type_coerce
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import NullType

from filters import Filter, FilterError, MultiMatcher, compile_many, parse_filter
from gateway.store import Database
from gateway.store import tables as t
from gateway.store.bulk import json_value

log = logging.getLogger("gateway.automations")

# ~3 kB per webhook of 10 automations: sized so a store of 10,000 busy webhooks stays cached
MAX_CACHED_WEBHOOKS = 16_384
# prompts run to 100,000 characters: only those of automations that start runs are kept, up to
# this many characters in all, least recently used first out
MAX_CACHED_PROMPT_CHARS = 8_000_000
CHUNK = 500  # keys per IN (...) list
WARM_UP_CHUNK = 1_000  # webhooks per read at start-up

Key = str  # the uid of the automation whose trigger matched (once per matching trigger)


@dataclass(frozen=True, slots=True)
class LiveHook:
    """An enabled, not deleted webhook and the factory its runs go to."""

    uid: str
    name: str
    factory_uid: str
    team_uid: str
    foreman_agent_uid: str | None


@dataclass(frozen=True, slots=True)
class HookAutomations:
    """A webhook as the evaluator sees it at config revision `revision`: `hook` is None when it
    is not live; `matcher` yields the uids of the automations whose triggers a payload matches;
    `order` holds the uids of the automations it was compiled from, in its order, and `stamps`
    each one's updated_at as stored, in the same order.

    The evaluator keeps one per webhook of the store, so nothing is held twice: the uid strings
    are shared by the matcher and `order`, and what can be derived (an outcome trace) is."""

    hook: LiveHook | None
    signature: bytes
    matcher: MultiMatcher[Key]
    order: tuple[str, ...]
    stamps: array[int]  # `stamp_micros`, packed: 8 bytes each
    revision: int

    def stamp_of(self, automation_uid: str) -> int:
        return self.stamps[self.order.index(automation_uid)]


@dataclass(frozen=True, slots=True)
class Automation:
    """What a run it starts takes from it: `agent_uid` (None: the factory's foreman) and
    `agent_config`, its runs' configuration already encoded for the driver (None: none), read
    once when the automation is (re)loaded, not per delivery."""

    uid: str
    name: str
    prompt: str
    stamp: int
    agent_uid: str | None = None
    agent_config: str | None = None
    worker_host: str | None = None  # the self-hosted worker its runs are pinned to


# a webhook's matcher and the automation uids it was compiled from, in its order
Compiled = tuple[MultiMatcher[Key], tuple[str, ...]]
Stamps = dict[str, int]  # automation uid -> updated_at (`stamp_micros`)
# a trigger of an enabled automation: (webhook_uid, uid, position, payload_filter)
TriggerRow = Row[tuple[str, str, int, Any]]


class AutomationIndex:
    def __init__(self) -> None:
        self._hooks: OrderedDict[str, HookAutomations] = OrderedDict()
        self._prompts: OrderedDict[str, Automation] = OrderedDict()
        self._prompt_chars = 0
        self._names: dict[str, str] = {}  # factory, team and agent uids, each one string
        self.revision = -1
        self.compilations = 0

    async def lookup(
        self, conn: AsyncConnection, webhook_uids: Iterable[str], revision: int | None = None
    ) -> dict[str, HookAutomations]:
        """Every given webhook's current entry; reads only the config revision (unless given,
        as read through `conn`) unless something changed or was never read."""
        self.revision = await config_revision(conn) if revision is None else revision
        found: dict[str, HookAutomations] = {}
        unsure: list[str] = []
        for uid in set(webhook_uids):
            entry = self._hooks.get(uid)
            if entry is not None and entry.revision == self.revision:
                self._hooks.move_to_end(uid)
                found[uid] = entry
            else:
                unsure.append(uid)
        if unsure:
            found.update(await self._check(conn, unsure))
        return found

    async def warm_up(self, database: Database) -> int:
        """Reads and compiles the automations of the store's live webhooks (the most recently
        updated first, as many as are cached), before the first delivery needs them: else the
        first minute after a start spends its CPU compiling the filters of every webhook seen for
        the first time, and evaluation lags behind. How many webhooks it read."""
        w = t.webhooks
        query = (
            select(w.c.uid)
            .where(w.c.deleted_at.is_(None), w.c.enabled)
            .order_by(w.c.updated_at.desc())
            .limit(MAX_CACHED_WEBHOOKS)
        )
        async with database.read() as conn:
            uids = list((await conn.execute(query)).scalars())
        for start in range(0, len(uids), WARM_UP_CHUNK):  # short reads: writers get their turns
            async with database.read() as conn:
                await self.lookup(conn, uids[start : start + WARM_UP_CHUNK])
            await asyncio.sleep(0)
        return len(uids)

    async def automations(
        self, conn: AsyncConnection, wanted: dict[str, int]
    ) -> dict[str, Automation]:
        """Name and prompt of each automation uid in `wanted` (uid -> updated_at stamp);
        automations deleted meanwhile are absent."""
        found: dict[str, Automation] = {}
        missing: list[str] = []
        for uid, stamp in wanted.items():
            cached = self._prompts.get(uid)
            if cached is not None and cached.stamp == stamp:
                self._prompts.move_to_end(uid)
                found[uid] = cached
            else:
                missing.append(uid)
        for automation in await _automations(conn, missing):
            found[automation.uid] = automation
            self._keep_prompt(automation)
        return found

    async def _check(
        self, conn: AsyncConnection, webhook_uids: Sequence[str]
    ) -> dict[str, HookAutomations]:
        if len(self._names) > MAX_CACHED_WEBHOOKS:
            self._names.clear()
        hooks = await _live_hooks(conn, webhook_uids, self._names)
        stamps = await _stamps(conn, [uid for uid in webhook_uids if uid in hooks])
        found: dict[str, HookAutomations] = {}
        stale: list[str] = []
        for uid in webhook_uids:
            hook = hooks.get(uid)
            own = stamps.get(uid, {})
            signature = _signature(own.items())
            cached = self._hooks.get(uid)
            if cached is not None and cached.hook == hook and cached.signature == signature:
                compiled = (cached.matcher, cached.order)
                found[uid] = self._keep(uid, cached.hook, signature, compiled, own)
            elif hook is None or not own:
                found[uid] = self._keep(uid, hook, signature, (_NOTHING, ()), own)
            else:
                stale.append(uid)
        if stale:
            triggers = await _enabled_triggers(conn, stale)
            for uid in stale:
                own = stamps[uid]
                compiled = self._compile(uid, triggers.get(uid, []), own)
                found[uid] = self._keep(uid, hooks[uid], _signature(own.items()), compiled, own)
        return found

    def _keep(
        self,
        uid: str,
        hook: LiveHook | None,
        signature: bytes,
        compiled: Compiled,
        stamps: Stamps,
    ) -> HookAutomations:
        matcher, order = compiled
        in_order = array("q", [stamps[automation_uid] for automation_uid in order])
        entry = HookAutomations(hook, signature, matcher, order, in_order, self.revision)
        if hook is not None:
            uid = hook.uid  # one string for the key and the entry
        self._hooks[uid] = entry
        self._hooks.move_to_end(uid)
        while len(self._hooks) > MAX_CACHED_WEBHOOKS:
            self._hooks.popitem(last=False)
        return entry

    def _compile(self, webhook_uid: str, triggers: list[TriggerRow], stamps: Stamps) -> Compiled:
        # the automation uid strings of `stamps` serve as keys (the rows hold copies of them)
        same = {uid: uid for uid in stamps}
        filters: list[tuple[Key, Filter | None]] = []
        for row in triggers:
            try:
                filters.append((same.get(row.uid, row.uid), parse_filter(row.payload_filter or {})))
            except FilterError as exc:  # validated on write; a stored fault must not stop others
                log.error("automation %s trigger %d: bad filter: %s", row.uid, row.position, exc)
        self.compilations += 1
        return compile_many(filters), tuple(dict.fromkeys(uid for uid, _filter in filters))

    def _keep_prompt(self, automation: Automation) -> None:
        old = self._prompts.pop(automation.uid, None)
        if old is not None:
            self._prompt_chars -= len(old.prompt)
        self._prompts[automation.uid] = automation
        self._prompt_chars += len(automation.prompt)
        while self._prompt_chars > MAX_CACHED_PROMPT_CHARS and len(self._prompts) > 1:
            _, evicted = self._prompts.popitem(last=False)
            self._prompt_chars -= len(evicted.prompt)


_NOTHING: MultiMatcher[Key] = compile_many({})


def stamp_micros(raw: Any) -> int:
    """An automation's updated_at as read through STAMP (text on SQLite, a datetime on
    PostgreSQL) in microseconds since the epoch: the evaluator holds one per automation of the
    store, and an int packs into 8 bytes where the text took ~75."""
    when = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return (when - _EPOCH) // _MICROSECOND


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _signature(pairs: Iterable[tuple[str, Any]]) -> bytes:
    # a digest, not the pairs themselves: ~1 kB less per cached webhook of 10 automations
    canonical = repr(sorted(pairs)).encode()
    return hashlib.blake2b(canonical, digest_size=16).digest()


async def config_revision(conn: AsyncConnection) -> int:
    query = select(t.config_revision.c.value).where(t.config_revision.c.id == 1)
    return int((await conn.execute(query)).scalar_one())


def chunks(keys: Sequence[str]) -> Iterable[list[str]]:
    ordered = sorted(keys)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]


async def _live_hooks(
    conn: AsyncConnection, webhook_uids: Sequence[str], shared: dict[str, str]
) -> dict[str, LiveHook]:
    """`shared`: one string per factory, team and agent, however many webhooks name it."""
    w, f = t.webhooks, t.factories
    found: dict[str, LiveHook] = {}
    for chunk in chunks(webhook_uids):
        query = (
            select(w.c.uid, w.c.name, f.c.uid, f.c.team_uid, f.c.foreman_agent_uid)
            .join(f, f.c.uid == w.c.factory_uid)
            .where(w.c.uid.in_(chunk), w.c.deleted_at.is_(None), w.c.enabled)
        )
        for uid, name, factory_uid, team_uid, foreman in await conn.execute(query):
            factory_uid = shared.setdefault(factory_uid, factory_uid)
            team_uid = shared.setdefault(team_uid, team_uid)
            foreman = foreman if foreman is None else shared.setdefault(foreman, foreman)
            found[uid] = LiveHook(uid, name, factory_uid, team_uid, foreman)
    return found


# automations.updated_at as the driver returns it (a string on SQLite): the signatures compare it,
# and skipping the type's result processing keeps reading them cheap
STAMP = type_coerce(t.automations.c.updated_at, NullType()).label("stamp")


def _enabled(hooks: list[str]) -> tuple[Any, tuple[Any, ...]]:
    """Triggers on these webhooks of enabled automations of the webhook's factory."""
    a, tr, w = t.automations, t.automation_triggers, t.webhooks
    return (
        a.join(tr, tr.c.automation_uid == a.c.uid).join(w, w.c.uid == tr.c.webhook_uid),
        (tr.c.webhook_uid.in_(hooks), a.c.enabled, a.c.factory_uid == w.c.factory_uid),
    )


async def _stamps(conn: AsyncConnection, webhook_uids: Sequence[str]) -> dict[str, Stamps]:
    """Per webhook with enabled automations: automation uid -> updated_at."""
    a, tr = t.automations, t.automation_triggers
    found: dict[str, Stamps] = {}
    for chunk in chunks(webhook_uids):
        joined, where = _enabled(chunk)
        query = select(tr.c.webhook_uid, a.c.uid, STAMP).select_from(joined).where(*where)
        for webhook_uid, uid, stamp in await conn.execute(query):
            found.setdefault(webhook_uid, {})[uid] = stamp_micros(stamp)
    return found


async def _enabled_triggers(
    conn: AsyncConnection, webhook_uids: Sequence[str]
) -> dict[str, list[TriggerRow]]:
    """Per webhook, its triggers of enabled automations, in automation creation order."""
    a, tr = t.automations, t.automation_triggers
    found: dict[str, list[TriggerRow]] = {}
    for chunk in chunks(webhook_uids):
        joined, where = _enabled(chunk)
        query: Any = (
            select(tr.c.webhook_uid, a.c.uid, tr.c.position, tr.c.payload_filter)
            .select_from(joined)
            .where(*where)
            .order_by(tr.c.webhook_uid, a.c.created_at, a.c.uid, tr.c.position)
        )
        for row in await conn.execute(query):
            found.setdefault(row.webhook_uid, []).append(row)
    return found


def _pinned_worker(config: dict[str, Any] | None) -> str | None:
    """The worker an automation's runs are pinned to: its configuration's `worker_host`, unless
    empty or `warp` (the team's pool); the platform's `worker_pinning.pinned_host` rule, which
    the product boundary keeps this side from importing."""
    host = (config or {}).get("worker_host")
    if not isinstance(host, str) or host.strip() in ("", "warp"):
        return None
    return host.strip()


async def _automations(conn: AsyncConnection, uids: Sequence[str]) -> list[Automation]:
    a = t.automations
    found = []
    for chunk in chunks(uids):
        query = select(a.c.uid, a.c.name, a.c.prompt, STAMP, a.c.agent_uid, a.c.agent_config).where(
            a.c.uid.in_(chunk)
        )
        for row in await conn.execute(query):
            found.append(
                Automation(
                    row.uid,
                    row.name,
                    row.prompt,
                    stamp_micros(row.stamp),
                    row.agent_uid,
                    json_value(row.agent_config),
                    _pinned_worker(row.agent_config),
                )
            )
    return found
