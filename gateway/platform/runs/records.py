"""Agent runs: creation, visibility, and the RunItems official clients parse. Runs leave the
store as `models.RunRecord`."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.errors import NotFound
from gateway.platform.runs.models import AgentConfig, Creator, RunArtifact, RunItem, RunRecord
from gateway.platform.runs.worker_pinning import pinned_worker
from gateway.store import tables as t
from gateway.store.types import utcnow

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})
LIVE = frozenset({"CLAIMED", "INPROGRESS"})  # a session is running on a worker

r = t.runs


# not frozen: the evaluator makes one per run, and a frozen dataclass of this many fields costs
# ~3x as much to build (one object.__setattr__ per field)
@dataclass(slots=True)
class NewRun:
    prompt: str
    team_uid: str | None
    title: str | None = None
    factory_uid: str | None = None
    creator: Principal | None = None
    source: str = "API"
    run_type: str = "cloud"
    agent_config: AgentConfig | None = None
    metadata: dict[str, str] | None = None
    artifacts: list[RunArtifact] | None = None
    ticket_ref: str | None = None
    ticket_url: str | None = None
    parent: RunRecord | None = None  # the parent run: the child joins its tree
    conversation_id: str | None = None  # continue this conversation with a new root run
    task_pending: bool = False
    agent_uid: str | None = None  # the agent that executes it
    mode: str | None = None  # of its first execution; None is normal


async def insert_run(conn: AsyncConnection, new: NewRun, run_id: str | None = None) -> RunRecord:
    """Inserts a QUEUED run. A child shares its root's conversation and root; a root run starts
    a new conversation unless it continues one."""
    run_id = run_id or ids.new_uuid()
    await conn.execute(insert(r).values(**run_values(new, run_id, utcnow())))
    return await load_run(conn, run_id)


async def insert_runs(conn: AsyncConnection, runs: Sequence[tuple[NewRun, str]]) -> None:
    """Inserts many QUEUED runs (as `insert_run` does each) with one statement."""
    if not runs:
        return
    now = utcnow()
    # created_at keeps the given order (listings sort on it)
    rows = [
        run_values(new, run_id, now + timedelta(microseconds=i))
        for i, (new, run_id) in enumerate(runs)
    ]
    await conn.execute(insert(r), rows)


def run_values(new: NewRun, run_id: str, now: datetime) -> dict[str, object]:
    """The column values of a new QUEUED run, as the store takes them."""
    if new.parent is not None:
        conversation, root = new.parent.conversation_id, new.parent.root_run_id
    else:
        conversation, root = new.conversation_id or ids.new_uuid(), run_id
    return {
        "run_id": run_id,
        "team_uid": new.team_uid,
        "factory_uid": new.factory_uid,
        "conversation_id": conversation,
        "parent_run_id": None if new.parent is None else new.parent.run_id,
        "root_run_id": root,
        "title": new.title,
        "prompt": new.prompt,
        "state": "QUEUED",
        "source": new.source,
        "run_type": new.run_type,
        "creator_kind": None if new.creator is None else new.creator.kind,
        "creator_uid": None if new.creator is None else new.creator.uid,
        "agent_config": json_column(new.agent_config),
        "metadata": new.metadata,
        "artifacts": json_column(new.artifacts),
        "ticket_ref": new.ticket_ref,
        "ticket_url": new.ticket_url,
        "created_at": now,
        "updated_at": now,
        "task_pending": new.task_pending,
        "agent_uid": new.agent_uid,
        "mode": new.mode,
        "worker_host": pinned_worker(new.agent_config),
    }


def json_column(value: msgspec.Struct | list[RunArtifact] | None) -> Any:
    """A Struct (or a list of them) as a JSON column holds it."""
    return None if value is None else msgspec.to_builtins(value)


async def load_run(conn: AsyncConnection, run_id: str) -> RunRecord:
    run = await find_run(conn, run_id)
    if run is None:
        raise NotFound(f"run_id: {run_id} not found")
    return run


async def find_run(conn: AsyncConnection, run_id: str) -> RunRecord | None:
    row = (await conn.execute(select(r).where(r.c.run_id == run_id))).first()
    return None if row is None else RunRecord.from_row(row)


async def lock_run(conn: AsyncConnection, run_id: str) -> RunRecord:
    """The run, re-read under a row lock (PostgreSQL; SQLite has one writer anyway), so state
    changes decided on it cannot interleave."""
    query = select(r).where(r.c.run_id == run_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"run_id: {run_id} not found")
    return RunRecord.from_row(row)


def can_view(principal: Principal, run: RunRecord) -> bool:
    """Runs are visible to their creator and to every member of the run's team."""
    return run.creator_uid == principal.uid or run.team_uid in principal.team_uids


async def visible_run(conn: AsyncConnection, principal: Principal, run_id: str) -> RunRecord:
    """The run, or 404 when it does not exist or the caller may not see it (no existence leak)."""
    run = await find_run(conn, run_id)
    if run is None or not can_view(principal, run):
        raise NotFound(f"run_id: {run_id} not found")
    return run


async def newest_root_run(conn: AsyncConnection, conversation_id: str) -> RunRecord | None:
    """The conversation's current top-level run: its newest run without a parent."""
    query = (
        select(r)
        .where(r.c.conversation_id == conversation_id, r.c.parent_run_id.is_(None))
        .order_by(r.c.created_at.desc(), r.c.run_id.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else RunRecord.from_row(row)


async def creators(
    conn: AsyncConnection, people: Collection[tuple[str | None, str | None]]
) -> dict[str, Creator]:
    """The creators of (kind, uid) principals, users and agents, keyed by uid; unknown ones are
    missing."""
    users = {uid for kind, uid in people if kind == "user"}
    agents = {uid for kind, uid in people if kind == "agent"}
    found: dict[str, Creator] = {}
    if users:
        for u in await conn.execute(select(t.users).where(t.users.c.uid.in_(users))):
            found[u.uid] = Creator(u.uid, u.email, u.display_name, "user")
    if agents:
        for a in await conn.execute(select(t.agents).where(t.agents.c.uid.in_(agents))):
            found[a.uid] = Creator(a.uid, None, a.name, "service_account")
    return found


async def run_items(conn: AsyncConnection, runs: Sequence[RunRecord]) -> list[RunItem]:
    found = await creators(conn, [(run.creator_kind, run.creator_uid) for run in runs])
    return [RunItem.of(run, found.get(run.creator_uid or "")) for run in runs]


async def run_item(conn: AsyncConnection, run: RunRecord) -> RunItem:
    return (await run_items(conn, [run]))[0]
