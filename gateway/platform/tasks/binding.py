"""Binding dispatched runs to their factory tasks, asynchronously (docs/runs-and-tasks.md).

A run dispatched to a factory (platform/factories/dispatch.py) is inserted with
`task_pending = true`. `bind_pending` creates the tasks of such runs and clears the flag; it is
called right after a dispatch commits (spawned in the background), before task lookups and
listings (so task-by-run resolves even if the background step was lost to a crash), and
periodically by `task_binder` for runs started by the webhook evaluator.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.kernel.event_waits import pause
from gateway.platform.tasks.models import TaskSeed
from gateway.platform.tasks.tasks import create_seed_task, seed_title

log = logging.getLogger("gateway.dispatch")
BIND_BATCH = 100
# `= true`, not `IS true`: the form the partial index ix_runs_task_pending is found by
_WAITING_FOR_TASK = t.runs.c.task_pending == True  # noqa: E712


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
        await pause(interval_s)
