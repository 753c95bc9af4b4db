"""Agent runs: creation, visibility, and the RunItem wire shape that official clients parse."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.errors import NotFound
from gateway.store import tables as t
from gateway.store.types import utcnow

RUN_STATES = (
    "QUEUED",
    "PENDING",
    "CLAIMED",
    "INPROGRESS",
    "SUCCEEDED",
    "FAILED",
    "BLOCKED",
    "ERROR",
    "CANCELLED",
)
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "ERROR", "CANCELLED"})
LIVE = frozenset({"CLAIMED", "INPROGRESS"})  # a session is running on a worker
CANCELLABLE_TYPES = frozenset({"cloud"})  # local and CI-action runs cannot be cancelled here
CONFIG_KEYS = frozenset(
    {"name", "model_id", "base_prompt", "environment_id", "worker_host", "skill_spec"}
)

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
    agent_config: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    artifacts: list[dict[str, Any]] | None = None
    ticket_ref: str | None = None
    ticket_url: str | None = None
    parent: Row[Any] | None = None  # the parent run's row: the child joins its tree
    conversation_id: str | None = None  # continue this conversation with a new root run
    task_pending: bool = False
    agent_uid: str | None = None  # the agent that executes it
    mode: str | None = None  # of its first execution; None is normal


async def insert_run(conn: AsyncConnection, new: NewRun, run_id: str | None = None) -> Row[Any]:
    """Inserts a QUEUED run. A child shares its root's conversation and root; a root run starts
    a new conversation unless it continues one."""
    values = run_values(new, run_id or ids.new_uuid(), utcnow())
    await conn.execute(insert(r).values(**values))
    return await load_run(conn, values["run_id"])


async def insert_runs(
    conn: AsyncConnection, runs: Sequence[tuple[NewRun, str]]
) -> list[dict[str, Any]]:
    """Inserts many QUEUED runs (as `insert_run` does each) with one statement; returns the
    inserted values, in order, without reading them back."""
    if not runs:
        return []
    now = utcnow()
    # created_at keeps the given order (listings sort on it)
    rows = [
        run_values(new, run_id, now + timedelta(microseconds=i))
        for i, (new, run_id) in enumerate(runs)
    ]
    await conn.execute(insert(r), rows)
    return rows


def run_values(new: NewRun, run_id: str, now: datetime) -> dict[str, Any]:
    """The row of a new QUEUED run."""
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
        "agent_config": new.agent_config,
        "metadata": new.metadata,
        "artifacts": new.artifacts,
        "ticket_ref": new.ticket_ref,
        "ticket_url": new.ticket_url,
        "created_at": now,
        "updated_at": now,
        "task_pending": new.task_pending,
        "agent_uid": new.agent_uid,
        "mode": new.mode,
    }


async def load_run(conn: AsyncConnection, run_id: str) -> Row[Any]:
    row = await find_run(conn, run_id)
    if row is None:
        raise NotFound(f"run_id: {run_id} not found")
    return row


async def find_run(conn: AsyncConnection, run_id: str) -> Row[Any] | None:
    return (await conn.execute(select(r).where(r.c.run_id == run_id))).first()


async def lock_run(conn: AsyncConnection, run_id: str) -> Row[Any]:
    """The run, re-read under a row lock (PostgreSQL; SQLite has one writer anyway), so state
    changes decided on it cannot interleave."""
    query = select(r).where(r.c.run_id == run_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"run_id: {run_id} not found")
    return row


def can_view(principal: Principal, row: Row[Any]) -> bool:
    """Runs are visible to their creator and to every member of the run's team."""
    return row.creator_uid == principal.uid or row.team_uid in principal.team_uids


async def visible_run(conn: AsyncConnection, principal: Principal, run_id: str) -> Row[Any]:
    """The run, or 404 when it does not exist or the caller may not see it (no existence leak)."""
    row = await find_run(conn, run_id)
    if row is None or not can_view(principal, row):
        raise NotFound(f"run_id: {run_id} not found")
    return row


async def newest_root_run(conn: AsyncConnection, conversation_id: str) -> Row[Any] | None:
    """The conversation's current top-level run: its newest run without a parent."""
    query = (
        select(r)
        .where(r.c.conversation_id == conversation_id, r.c.parent_run_id.is_(None))
        .order_by(r.c.created_at.desc(), r.c.run_id.desc())
        .limit(1)
    )
    return (await conn.execute(query)).first()


async def creators(conn: AsyncConnection, rows: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Creator objects of the given runs, keyed by principal uid (users and agents)."""
    users = {row.creator_uid for row in rows if row.creator_kind == "user"}
    agents = {row.creator_uid for row in rows if row.creator_kind == "agent"}
    found: dict[str, dict[str, Any]] = {}
    if users:
        for u in await conn.execute(select(t.users).where(t.users.c.uid.in_(users))):
            found[u.uid] = _creator(u.uid, u.email, u.display_name, "user")
    if agents:
        for a in await conn.execute(select(t.agents).where(t.agents.c.uid.in_(agents))):
            found[a.uid] = _creator(a.uid, None, a.name, "service_account")
    return found


def _creator(uid: str, email: str | None, name: str, kind: str) -> dict[str, Any]:
    return {"uid": uid, "email": email, "display_name": name, "type": kind}


def run_json(row: Row[Any], creator: dict[str, Any] | None = None) -> dict[str, Any]:
    """RunItem (docs/api.md): the fixed fields always, the rest when known."""
    item: dict[str, Any] = {
        "run_id": row.run_id,
        "task_id": row.run_id,
        "title": row.title,
        "prompt": row.prompt,
        "state": row.state,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "conversation_id": row.conversation_id,
        "source": row.source,
        "is_run_type_cancellable": row.run_type in CANCELLABLE_TYPES,
    }
    optional = {
        "started_at": row.started_at,
        "session_id": row.session_id,
        "session_link": row.session_link,
        "parent_run_id": row.parent_run_id,
        "agent_config": row.agent_config,
        "creator": creator,
        "metadata": row.metadata,
        "status_message": row.status_message,
        "artifacts": row.artifacts,
    }
    item.update({key: value for key, value in optional.items() if value is not None})
    return item


async def runs_json(conn: AsyncConnection, rows: list[Row[Any]]) -> list[dict[str, Any]]:
    found = await creators(conn, rows)
    return [run_json(row, found.get(row.creator_uid or "")) for row in rows]


async def one_run_json(conn: AsyncConnection, row: Row[Any]) -> dict[str, Any]:
    return (await runs_json(conn, [row]))[0]
