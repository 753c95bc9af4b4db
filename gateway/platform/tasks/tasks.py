"""Factory tasks: one live task per conversation, bound to the conversation's runs.

Binding rules (docs/runs-and-tasks.md): a conversation is bound to at most one live task across
all factories (a partial unique index enforces it under concurrency), and the conversation's
newest top-level run must be owned by the factory's team. Deleting is soft; the conversation can
then be bound again. Reads and results are `models.Task`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from msgspec import UNSET
from sqlalchemy import Row, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Conflict, Forbidden, InvalidRequest, NotFound
from gateway.platform.inbox import notifications as inbox
from gateway.platform.runs.record import cancellation
from gateway.platform.runs.record.items import creators, run_item
from gateway.platform.runs.record.store import can_view, find_run, newest_root_run, visible_run
from gateway.platform.tasks import stage_triggers
from gateway.platform.tasks.models import (
    Task,
    TaskCreate,
    TaskOutput,
    TaskPatch,
    TaskRef,
    TaskSeed,
    TaskValues,
    TicketSource,
)

FORGE_REF = re.compile(r"[\w.-]+/[\w.-]+#\d+")
KEY_REF = re.compile(r"[A-Za-z][A-Za-z0-9_]*-\d+")

tk = t.tasks


def ticket_parts(ticket_ref: str | None) -> tuple[TicketSource | None, str | None]:
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
    factory_uid: str, title: str, stage: str, seed: TaskSeed, now: datetime
) -> TaskValues:
    """The row of a new task bound to the conversation of `seed`."""
    source, ticket_id = ticket_parts(seed.ticket_ref)
    return TaskValues(
        uid=ids.new_id("task"),
        factory_uid=factory_uid,
        title=title,
        stage=stage,
        conversation_id=seed.conversation_id,
        created_by_uid=seed.creator_uid,
        ticket_source=source,
        ticket_id=ticket_id,
        created_at=now,
        updated_at=now,
    )


def seed_title(run_title: str | None, prompt: str) -> str:
    """A dispatched run's task title: the run's title, else its prompt's first line."""
    return run_title or (prompt.strip().splitlines() or ["Factory run"])[0][:200]


async def _insert(
    conn: AsyncConnection, factory_uid: str, title: str, stage: str, seed: TaskSeed
) -> str:
    values = task_values(factory_uid, title, stage, seed, utcnow())
    try:
        async with conn.begin_nested():
            await conn.execute(insert(tk).values(**values))
    except IntegrityError as exc:
        raise Conflict(
            f"conversation_id: {seed.conversation_id} is already bound to a live task"
        ) from exc
    return values["uid"]


async def create_task(conn: AsyncConnection, factory: Factory, spec: TaskCreate) -> Task:
    conversation = spec.conversation_id
    seed = await newest_root_run(conn, conversation)
    # another team's conversation answers exactly as a missing one: ids must not be probed
    if seed is None or seed.team_uid != factory.team_uid:
        raise InvalidRequest(
            f"conversation_id: no conversation {conversation!r} owned by this factory's team"
        )
    if await live_task_of(conn, conversation) is not None:
        raise Conflict(f"conversation_id: {conversation} is already bound to a live task")
    stage = spec.stage or "TRIAGE"
    uid = await _insert(conn, factory.uid, spec.title, stage, TaskSeed.of_run(seed))
    return await get_task(conn, factory.uid, uid)


async def create_seed_task(
    conn: AsyncConnection, factory_uid: str, title: str, seed: TaskSeed
) -> bool:
    """The task of a dispatched run; False when its conversation already has a live task."""
    if await live_task_of(conn, seed.conversation_id) is not None:
        return False
    try:
        await _insert(conn, factory_uid, title, "TRIAGE", seed)
    except Conflict:
        return False
    return True


async def live_task_of(conn: AsyncConnection, conversation_id: str) -> TaskRef | None:
    query = select(tk.c.uid, tk.c.factory_uid).where(
        tk.c.conversation_id == conversation_id, tk.c.deleted_at.is_(None)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else TaskRef(row.uid, row.factory_uid)


async def _task_row(conn: AsyncConnection, factory_uid: str, task_uid: str) -> Row[Any]:
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


async def get_task(
    conn: AsyncConnection, factory_uid: str, task_uid: str, *, current_run: bool = False
) -> Task:
    """One task as GET answers it: with derived outputs, newest first."""
    row = await _task_row(conn, factory_uid, task_uid)
    (task,) = await task_views(conn, [row], full=True, current_run=current_run)
    return task


async def update_task(
    conn: AsyncConnection, factory_uid: str, task_uid: str, patch: TaskPatch
) -> Task:
    """Last write wins; any stage may follow any stage. A new stage notifies the team."""
    changes = {
        name: getattr(patch, name)
        for name in patch.__struct_fields__
        if getattr(patch, name) is not UNSET
    }
    await _change(conn, factory_uid, task_uid, changes)
    return await get_task(conn, factory_uid, task_uid)


async def _change(
    conn: AsyncConnection, factory_uid: str, task_uid: str, changes: dict[str, object]
) -> None:
    before = await _task_row(conn, factory_uid, task_uid)
    now = utcnow()
    await conn.execute(update(tk).where(tk.c.uid == task_uid).values(**changes, updated_at=now))
    stage = changes.get("stage", before.stage)
    if stage != before.stage:
        await inbox.on_stage_change(
            conn,
            factory_uid=before.factory_uid,
            task_uid=before.uid,
            title=before.title,
            before=before.stage,
            after=str(stage),
            at=now,
        )
        # the automations a move to this stage fires, in this transaction
        await stage_triggers.on_stage_change(conn, before, str(stage))


async def cancel_task(
    conn: AsyncConnection, principal: Principal, factory_uid: str, task_uid: str
) -> Task:
    """Cancels the task's current run; the task becomes CANCELLED and is answered with its
    current run."""
    row = await _task_row(conn, factory_uid, task_uid)
    run = await newest_root_run(conn, row.conversation_id)
    if run is None:
        raise NotFound(f"task: {task_uid} has no resolvable current run")
    if not can_view(principal, run):
        raise Forbidden(f"task: the current run of {task_uid} is not accessible to you")
    await cancellation.cancel(conn, run)
    await _change(conn, factory_uid, task_uid, {"stage": "CANCELLED"})
    return await get_task(conn, factory_uid, task_uid, current_run=True)


async def delete_task(conn: AsyncConnection, factory_uid: str, task_uid: str) -> None:
    await _task_row(conn, factory_uid, task_uid)
    now = utcnow()
    await conn.execute(
        update(tk).where(tk.c.uid == task_uid).values(deleted_at=now, updated_at=now)
    )
    await inbox.on_task_deleted(conn, task_uid)


async def task_by_conversation(
    conn: AsyncConnection, factory_uid: str, conversation_id: str
) -> Task:
    task = await live_task_of(conn, conversation_id)
    if task is None or task.factory_uid != factory_uid:
        raise NotFound(f"conversation_id: no live task of this factory bound to {conversation_id}")
    return await get_task(conn, factory_uid, task.uid)


async def task_by_run(
    conn: AsyncConnection, principal: Principal, factory_uid: str, run_id: str
) -> Task:
    """Any run of a tree resolves through its root's conversation."""
    run = await visible_run(conn, principal, run_id)
    root = await find_run(conn, run.root_run_id) or run
    task = await live_task_of(conn, root.conversation_id)
    if task is None or task.factory_uid != factory_uid:
        raise NotFound(f"run_id: {run_id} does not resolve to a live task of this factory")
    return await get_task(conn, factory_uid, task.uid)


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


async def outputs_of(conn: AsyncConnection, task_uids: list[str]) -> dict[str, list[TaskOutput]]:
    """Derived outputs per task, newest first."""
    o = t.task_outputs
    query = (
        select(o).where(o.c.task_uid.in_(task_uids)).order_by(o.c.created_at.desc(), o.c.id.desc())
    )
    found: dict[str, list[TaskOutput]] = {uid: [] for uid in task_uids}
    for row in await conn.execute(query):
        found[row.task_uid].append(TaskOutput.from_row(row))
    return found


async def task_views(
    conn: AsyncConnection, rows: Sequence[Row[Any]], *, full: bool, current_run: bool
) -> list[Task]:
    """The tasks of `rows`: `full` adds the ticket and the outputs, `current_run` the
    conversation's newest top-level run."""
    # a task's creator may be a user or an agent: ask for both, whichever exists answers
    uids = {row.created_by_uid for row in rows if row.created_by_uid}
    people = await creators(conn, [(kind, uid) for uid in uids for kind in ("user", "agent")])
    outputs = await outputs_of(conn, [row.uid for row in rows]) if full else {}
    found = []
    for row in rows:
        task = Task.from_row(row, people.get(row.created_by_uid or ""), outputs.get(row.uid))
        if current_run:
            run = await newest_root_run(conn, row.conversation_id)
            task.current_run = None if run is None else await run_item(conn, run)
        found.append(task)
    return found
