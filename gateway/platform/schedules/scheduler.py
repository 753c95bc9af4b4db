"""The scheduler: starts the due slots of scheduled agents. It runs wherever deliveries are
evaluated (`gateway worker`, and the evaluator of `gateway serve`); any number may run at once,
each slot still starts one run (gateway.platform.schedules.slot_runs)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import Database
from gateway.foundation.store.types import utcnow
from gateway.kernel.event_waits import pause
from gateway.platform.runs.record.unclaimed import fail_unclaimed
from gateway.platform.schedules import automation_slots
from gateway.platform.schedules import slot_runs as schedule_runs

log = logging.getLogger("gateway.scheduler")

# cron slots are whole minutes: looking every few seconds starts a run within that of its slot
POLL_S = 5.0
S = TypeVar("S")


async def start_due(database: Database) -> int:
    """Starts every slot due now, of scheduled agents and of automations' inline schedules;
    returns how many runs this call started."""
    return await _start_agents(database) + await _start_automations(database)


async def _start_agents(database: Database) -> int:
    return await _start_slots(
        database,
        schedule_runs.due_slots,
        schedule_runs.start_slot,
        schedule_runs.DUE_BATCH,
        lambda slot, run_id: log.info("schedule %s: started run %s", slot.schedule_uid, run_id),
    )


async def _start_automations(database: Database) -> int:
    return await _start_slots(
        database,
        automation_slots.due_slots,
        automation_slots.start_slot,
        automation_slots.DUE_BATCH,
        lambda slot, run_id: log.info(
            "automation %s: scheduled run %s", slot.automation_uid, run_id
        ),
    )


async def _start_slots(
    database: Database,
    due_slots: Callable[[AsyncConnection, datetime], Awaitable[list[S]]],
    start_slot: Callable[[AsyncConnection, S], Awaitable[str | None]],
    batch: int,
    started: Callable[[S, str], None],
) -> int:
    """Starts the due slots `due_slots` finds, `batch` at a time, each in a transaction of its
    own (`started` is told of each run); returns how many runs it started."""
    count = 0
    while True:
        async with database.read() as conn:
            due = await due_slots(conn, utcnow())
        started_now = 0
        for slot in due:
            async with database.transaction() as conn:
                run_id = await start_slot(conn, slot)
            if run_id is not None:
                started_now += 1
                started(slot, run_id)
        count += started_now
        # a full batch may hide more due slots; one that started nothing leaves them to others
        if len(due) < batch or started_now == 0:
            return count


async def scheduler(
    database: Database, interval_s: float = POLL_S, worker_wait_s: float | None = None
) -> None:
    """Background loop: start due slots every `interval_s` seconds until cancelled; with
    `worker_wait_s`, also fail the runs pinned to a worker that did not come for them in time
    (runs/record/unclaimed.py)."""
    while True:
        try:
            await start_due(database)
            if worker_wait_s is not None:
                async with database.transaction() as conn:
                    await fail_unclaimed(conn, worker_wait_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store may be back in a moment; keep the loop alive
            log.warning("scheduler: %s", exc, exc_info=True)
        await pause(interval_s)
