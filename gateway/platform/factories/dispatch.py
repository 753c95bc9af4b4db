"""Dispatching work to a factory (POST /factory/{uid}/runs and webhook automations): a run for the
factory's foreman, and, asynchronously after the commit, the factory task bound to its
conversation.

Asynchronous task creation: a dispatched run is inserted with `task_pending = true`.
`bind_pending` creates the tasks of such runs and clears the flag; it is called right after a
dispatch commits (spawned in the background), before task lookups and listings (so
task-by-run resolves even if the background step was lost to a crash), and periodically by
`task_binder` for runs started by the webhook evaluator.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.accounts.factories import Factory
from gateway.accounts.identities import Principal
from gateway.errors import InvalidRequest, NoForeman
from gateway.platform.runs.models import RunItem as Run
from gateway.platform.runs.records import NewRun, insert_run, run_item
from gateway.platform.tasks.models import TaskSeed
from gateway.platform.tasks.tasks import create_seed_task, seed_title
from gateway.store import Database
from gateway.store import tables as t

log = logging.getLogger("gateway.dispatch")

# `PROJ-123`, `owner/repo#123`, or any other reference of these characters
TICKET_REF = re.compile(r"[A-Za-z0-9_.#/-]{1,200}")
MAX_PROMPT = 100_000
BIND_BATCH = 100
# `= true`, not `IS true`: the form the partial index ix_runs_task_pending is found by
_WAITING_FOR_TASK = t.runs.c.task_pending == True  # noqa: E712


@dataclass(frozen=True, slots=True)
class DispatchRequest:
    prompt: str
    title: str | None = None
    ticket_ref: str | None = None
    ticket_url: str | None = None


def parse_ticket_url(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) > 2000:
        raise InvalidRequest("ticket_url: expected an http or https URL (at most 2000 characters)")
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise InvalidRequest("ticket_url: expected an http or https URL") from exc
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in value):
        raise InvalidRequest("ticket_url: expected an http or https URL")
    return value


async def dispatch_run(
    conn: AsyncConnection, factory: Factory, request: DispatchRequest, *, creator: Principal
) -> Run:
    """The run for the factory's foreman (409 no_foreman without one); its task comes later."""
    if factory.foreman_agent_uid is None:
        raise NoForeman(f"factory: {factory.uid} has no foreman agent to receive work")
    new = NewRun(
        prompt=request.prompt,
        title=request.title,
        team_uid=factory.team_uid,
        factory_uid=factory.uid,
        creator=creator,
        ticket_ref=request.ticket_ref,
        ticket_url=request.ticket_url,
        task_pending=True,
        agent_uid=factory.foreman_agent_uid,
    )
    return await run_item(conn, await insert_run(conn, new))


async def bind_pending_in(conn: AsyncConnection, limit: int = BIND_BATCH) -> int:
    """Creates the tasks of dispatched runs still waiting for one; returns how many it bound."""
    pending = await conn.execute(
        select(t.runs).where(_WAITING_FOR_TASK).order_by(t.runs.c.created_at)
    )
    bound = 0
    for row in pending.fetchmany(limit):
        # claiming the flag first serialises concurrent binders on the run's row
        claim = await conn.execute(
            update(t.runs)
            .where(t.runs.c.run_id == row.run_id, _WAITING_FOR_TASK)
            .values(task_pending=False)
        )
        if claim.rowcount == 1 and await _seed_task(conn, row):
            bound += 1
    return bound


async def _seed_task(conn: AsyncConnection, run: Row[Any]) -> bool:
    if run.factory_uid is None:
        return False
    title = seed_title(run.title, run.prompt)
    return await create_seed_task(conn, run.factory_uid, title, TaskSeed.of_run(run))


async def bind_pending(database: Database) -> int:
    async with database.transaction() as conn:
        return await bind_pending_in(conn)


async def has_pending(database: Database) -> bool:
    async with database.read() as conn:
        query = select(t.runs.c.run_id).where(_WAITING_FOR_TASK).limit(1)
        return (await conn.execute(query)).first() is not None


async def ensure_bound(database: Database) -> None:
    """Before a task lookup: bind what is pending (cheap indexed check when nothing is)."""
    if await has_pending(database):
        await bind_pending(database)


async def task_binder(database: Database, interval_s: float = 2.0) -> None:
    """Background loop for the lead to spawn: binds runs started by the webhook evaluator."""
    while True:
        try:
            while await bind_pending(database) >= BIND_BATCH:
                pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store may be back in a moment; keep the loop alive
            log.warning("task binder: %s", exc, exc_info=True)
        await asyncio.sleep(interval_s)
