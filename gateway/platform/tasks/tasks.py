"""Factory tasks: one live task per conversation, bound to the conversation's runs.

Binding rules (docs/runs-and-tasks.md): a conversation is bound to at most one live task across
all factories (a partial unique index enforces it under concurrency), and the conversation's
newest top-level run must be owned by the factory's team. Deleting is soft; the conversation can
then be bound again.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from msgspec import structs
from sqlalchemy import Row, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.factories import Factory
from gateway.accounts.identities import Principal
from gateway.errors import Conflict, InvalidRequest, NotFound
from gateway.platform.inbox import notifications as inbox
from gateway.platform.runs.models import Creator, RunRecord
from gateway.platform.runs.records import (
    creators,
    find_run,
    newest_root_run,
    run_item,
    visible_run,
)
from gateway.platform.tasks import stage_triggers
from gateway.store import tables as t
from gateway.store.types import utcnow

TaskStage = Literal["TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED"]
FORGE_REF = re.compile(r"[\w.-]+/[\w.-]+#\d+")
KEY_REF = re.compile(r"[A-Za-z][A-Za-z0-9_]*-\d+")

tk = t.tasks


def ticket_parts(ticket_ref: str | None) -> tuple[str | None, str | None]:
    """(ticket_source, ticket_id) of a run's ticket_ref: a repository issue, an issue key, or
    another reference."""
    if ticket_ref is None:
        return None, None
    if FORGE_REF.fullmatch(ticket_ref):
        return "repository_issue", ticket_ref
    if KEY_REF.fullmatch(ticket_ref):
        return "issue_key", ticket_ref.upper()
    return "reference", ticket_ref


def task_values(
    factory_uid: str, title: str, stage: str, seed: Any, now: datetime
) -> dict[str, Any]:
    """The row of a new task bound to the conversation of `seed` (a run's row or values)."""
    source, ticket_id = ticket_parts(seed["ticket_ref"])
    return {
        "uid": ids.new_id("task"),
        "factory_uid": factory_uid,
        "title": title,
        "stage": stage,
        "conversation_id": seed["conversation_id"],
        "created_by_uid": seed["creator_uid"],
        "ticket_source": source,
        "ticket_id": ticket_id,
        "created_at": now,
        "updated_at": now,
    }


def seed_title(run_title: str | None, prompt: str) -> str:
    """A dispatched run's task title: the run's title, else its prompt's first line."""
    return run_title or (prompt.strip().splitlines() or ["Factory run"])[0][:200]


async def _insert(
    conn: AsyncConnection, factory_uid: str, title: str, stage: str, seed: RunRecord
) -> str:
    values = task_values(factory_uid, title, stage, structs.asdict(seed), utcnow())
    try:
        async with conn.begin_nested():
            await conn.execute(insert(tk).values(**values))
    except IntegrityError as exc:
        raise Conflict(
            f"conversation_id: {seed.conversation_id} is already bound to a live task"
        ) from exc
    return str(values["uid"])


async def create_task(
    conn: AsyncConnection, factory: Factory, title: str, conversation: str, stage: TaskStage
) -> Row[Any]:
    seed = await newest_root_run(conn, conversation)
    # another team's conversation answers exactly as a missing one: ids must not be probed
    if seed is None or seed.team_uid != factory.team_uid:
        raise InvalidRequest(
            f"conversation_id: no conversation {conversation!r} owned by this factory's team"
        )
    if await live_task_of(conn, conversation) is not None:
        raise Conflict(f"conversation_id: {conversation} is already bound to a live task")
    return await get_task(conn, factory.uid, await _insert(conn, factory.uid, title, stage, seed))


async def create_seed_task(conn: AsyncConnection, run: RunRecord) -> bool:
    """The task of a dispatched run; False when its conversation already has a live task."""
    if run.factory_uid is None or await live_task_of(conn, run.conversation_id) is not None:
        return False
    try:
        await _insert(conn, run.factory_uid, seed_title(run.title, run.prompt), "TRIAGE", run)
    except Conflict:
        return False
    return True


async def live_task_of(conn: AsyncConnection, conversation_id: str) -> Row[Any] | None:
    query = select(tk).where(tk.c.conversation_id == conversation_id, tk.c.deleted_at.is_(None))
    return (await conn.execute(query)).first()


async def get_task(conn: AsyncConnection, factory_uid: str, task_uid: str) -> Row[Any]:
    row = (
        await conn.execute(
            select(tk).where(
                tk.c.uid == task_uid, tk.c.factory_uid == factory_uid, tk.c.deleted_at.is_(None)
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"task: {task_uid} not found in this factory")
    return row


async def update_task(
    conn: AsyncConnection, factory_uid: str, task_uid: str, changes: dict[str, Any]
) -> Row[Any]:
    """Last write wins; any stage may follow any stage. A new stage notifies the team."""
    before = await get_task(conn, factory_uid, task_uid)
    now = utcnow()
    await conn.execute(update(tk).where(tk.c.uid == task_uid).values(**changes, updated_at=now))
    if changes.get("stage", before.stage) != before.stage:
        await inbox.on_stage_change(conn, before, changes["stage"], now)
        await stage_triggers.on_stage_change(conn, before, changes["stage"])
    return await get_task(conn, factory_uid, task_uid)


async def delete_task(conn: AsyncConnection, factory_uid: str, task_uid: str) -> None:
    await get_task(conn, factory_uid, task_uid)
    now = utcnow()
    await conn.execute(
        update(tk).where(tk.c.uid == task_uid).values(deleted_at=now, updated_at=now)
    )
    await inbox.on_task_deleted(conn, task_uid)


async def task_by_conversation(
    conn: AsyncConnection, factory_uid: str, conversation_id: str
) -> Row[Any]:
    row = await live_task_of(conn, conversation_id)
    if row is None or row.factory_uid != factory_uid:
        raise NotFound(f"conversation_id: no live task of this factory bound to {conversation_id}")
    return row


async def task_by_run(
    conn: AsyncConnection, principal: Principal, factory_uid: str, run_id: str
) -> Row[Any]:
    """Any run of a tree resolves through its root's conversation."""
    run = await visible_run(conn, principal, run_id)
    root = await find_run(conn, run.root_run_id) or run
    row = await live_task_of(conn, root.conversation_id)
    if row is None or row.factory_uid != factory_uid:
        raise NotFound(f"run_id: {run_id} does not resolve to a live task of this factory")
    return row


async def add_output(
    conn: AsyncConnection, task_uid: str, kind: str, title: str | None, url: str | None
) -> str:
    """Harness hook: records a derived output (a pull request, a document, ...) of a task."""
    output_id = ids.new_id("out")
    await conn.execute(
        insert(t.task_outputs).values(
            id=output_id, task_uid=task_uid, kind=kind, title=title, url=url, created_at=utcnow()
        )
    )
    return output_id


async def outputs_of(conn: AsyncConnection, task_uids: list[str]) -> dict[str, list[Any]]:
    """Derived outputs per task, newest first."""
    o = t.task_outputs
    query = (
        select(o).where(o.c.task_uid.in_(task_uids)).order_by(o.c.created_at.desc(), o.c.id.desc())
    )
    found: dict[str, list[Any]] = {uid: [] for uid in task_uids}
    for row in await conn.execute(query):
        found[row.task_uid].append(
            {"id": row.id, "kind": row.kind, "title": row.title, "url": row.url}
            | {"created_at": row.created_at}
        )
    return found


async def tasks_json(
    conn: AsyncConnection, rows: list[Row[Any]], *, full: bool, current_run: bool
) -> list[dict[str, Any]]:
    people = await creators(conn, _creator_rows(rows))
    outputs = await outputs_of(conn, [r.uid for r in rows]) if full else {}
    items = []
    for row in rows:
        item = _base_json(row, people.get(row.created_by_uid or ""))
        if full:
            item |= {
                "ticket_source": row.ticket_source,
                "ticket_id": row.ticket_id,
                "outputs": outputs[row.uid],
            }
        if current_run:
            run = await newest_root_run(conn, row.conversation_id)
            item["current_run"] = None if run is None else await run_item(conn, run)
        items.append(item)
    return items


async def task_json(conn: AsyncConnection, row: Row[Any], *, current_run: bool = False) -> Any:
    """One task as GET answers it: with derived outputs, newest first."""
    return (await tasks_json(conn, [row], full=True, current_run=current_run))[0]


def _base_json(row: Row[Any], creator: Creator | None) -> dict[str, Any]:
    item = {
        "uid": row.uid,
        "factory_uid": row.factory_uid,
        "title": row.title,
        "description": row.description,
        "stage": row.stage,
        "conversation_id": row.conversation_id,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if creator is not None:
        item["created_by"] = creator
    return item


class _CreatorRow:
    """Adapts a task row to what runs.creators reads (creator_kind, creator_uid)."""

    def __init__(self, uid: str, kind: str) -> None:
        self.creator_uid, self.creator_kind = uid, kind


def _creator_rows(rows: list[Row[Any]]) -> list[Any]:
    # a task's creator may be a user or an agent: ask for both, whichever exists answers
    uids = {r.created_by_uid for r in rows if r.created_by_uid}
    return [_CreatorRow(uid, kind) for uid in uids for kind in ("user", "agent")]
