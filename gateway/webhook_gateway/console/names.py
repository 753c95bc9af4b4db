"""The names the console prints instead of bare ids: factories, automations (and the definition
file a file-defined one comes from), agents, webhooks, provider connections and work items (by
their source, `owner/repo#12`), looked up in one query per kind for a page's worth of ids. An id
with no row (deleted since) keeps its id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t


@dataclass(frozen=True, slots=True)
class Named:
    uid: str
    name: str
    # a file-defined automation's file, as factory files lay it out (docs/factory-files.md)
    source: str = ""


@dataclass(slots=True)
class Names:
    """What a page needs named; `of(uid)` answers a Named whatever was found."""

    found: dict[str, Named]

    def of(self, uid: str | None) -> Named:
        if not uid:
            return Named("", "")
        return self.found.get(uid) or Named(uid, uid)


# the states a run ends in (the platform's TERMINAL; the gateway reads the runs table alone)
ENDED = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})


async def factory_automations(conn: AsyncConnection, factory_uid: str) -> list[Named]:
    """The factory's automations by name (with the file each file-defined one comes from)."""
    return (await automations_of(conn, [factory_uid])).get(factory_uid, [])


async def automations_of(
    conn: AsyncConnection, factory_uids: Iterable[str]
) -> dict[str, list[Named]]:
    """The automations of each of `factory_uids` by name, in one query."""
    a = t.automations
    query = select(a.c.uid, a.c.name, a.c.definition_name, a.c.factory_uid).where(
        a.c.factory_uid.in_(sorted(set(factory_uids)))
    )
    found: dict[str, list[Named]] = {}
    for row in await conn.execute(query.order_by(a.c.name, a.c.uid)):
        found.setdefault(row.factory_uid, []).append(_automation(row))
    return found


def _automation(row: Any) -> Named:
    source = f"automations/{row.definition_name}" if row.definition_name else ""
    return Named(row.uid, row.name, source)


KINDS: tuple[Table, ...] = (
    t.factories,
    t.agents,
    t.webhooks,
    t.provider_connections,
)


async def names(conn: AsyncConnection, uids: Iterable[str | None]) -> Names:
    """The names of `uids`, whichever kind each is (ids are unique across kinds)."""
    wanted = sorted({uid for uid in uids if uid})
    found: dict[str, Named] = {}
    if not wanted:
        return Names(found)
    a = t.automations
    query = select(a.c.uid, a.c.name, a.c.definition_name).where(a.c.uid.in_(wanted))
    found.update({row.uid: _automation(row) for row in await conn.execute(query)})
    for table in KINDS:
        rest = [uid for uid in wanted if uid not in found]
        if not rest:
            break
        rows = await conn.execute(select(table.c.uid, table.c.name).where(table.c.uid.in_(rest)))
        found.update({row.uid: Named(row.uid, row.name) for row in rows})
    rest = [uid for uid in wanted if uid not in found]
    if rest:
        w = t.work_items
        rows = await conn.execute(select(w.c.id, w.c.ref).where(w.c.id.in_(rest)))
        found.update({row.id: Named(row.id, row.ref) for row in rows})
    return Names(found)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a delivery's page says of each of its runs."""

    state: str
    status: str  # its status message, "" when none
    factory_uid: str | None
    work_item_id: str | None


async def run_facts(conn: AsyncConnection, run_ids: Iterable[str]) -> dict[str, RunFacts]:
    """The state and work item of each run (the runs a delivery started), read from the
    store's runs table (the gateway imports nothing of the platform)."""
    wanted = sorted(set(run_ids))
    if not wanted:
        return {}
    r = t.runs
    query = select(r.c.run_id, r.c.state, r.c.status_message, r.c.factory_uid, r.c.work_item_id)
    rows = await conn.execute(query.where(r.c.run_id.in_(wanted)))
    return {
        row.run_id: RunFacts(
            row.state, _status(row.status_message), row.factory_uid, row.work_item_id
        )
        for row in rows
    }


def _status(stored: Any) -> str:
    return str(stored.get("message") or "") if isinstance(stored, dict) else ""
