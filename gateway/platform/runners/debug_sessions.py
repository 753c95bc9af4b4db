"""Debug sessions of failed runs (spec 3.1; docs/runs-and-tasks.md, "Debug sessions").

A follow-up to a run that failed setting up its environment, within the debug window, goes to
the runner that ran it, whose retained session hosts a debug agent: the run stays FAILED with
its status message. The first such follow-up requests a session of that runner
(runs/conversations/debug_requests.py); the runner claims it here as it claims runs (`session`:
`debug`, the run FAILED), gets later follow-ups at its heartbeats, and ends it with a finish or
a release, which leave the run as it was (runners/leases.py). Each step is a timeline entry
(DEBUG_REQUESTED, DEBUG_OPENED, DEBUG_ENDED: entries, not states the run enters).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.runners.handover import CLAIMED_COLUMNS, claimed_run, follow_ups
from gateway.platform.runners.models import ClaimedRun
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.record import timeline as run_timeline

OPENED = "DEBUG_OPENED"
r = t.runs


async def claim_sessions(
    conn: AsyncConnection, runner: Runner, lease_s: float, limit: int
) -> list[ClaimedRun]:
    """Up to `limit` debug sessions requested of `runner`, opened, each with a lease."""
    if not runner.debug_sessions or limit < 1:
        return []
    pick = (
        select(r.c.run_id)
        .where(r.c.debug_session == "requested", r.c.debug_runner_uid == runner.uid)
        .order_by(r.c.updated_at, r.c.run_id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    run_ids = list((await conn.execute(pick)).scalars())
    if not run_ids:
        return []
    now = utcnow()
    opened = await conn.execute(
        update(r)
        .where(r.c.run_id.in_(run_ids), r.c.debug_session == "requested")
        .values(
            debug_session="open",
            runner_uid=runner.uid,
            lease_expires_at=now + timedelta(seconds=lease_s),
            lease_renewed_at=now,
        )
        .returning(*CLAIMED_COLUMNS)
    )
    rows = sorted(opened.all(), key=lambda row: (row.created_at, row.run_id))
    await run_timeline.record(
        conn, [row.run_id for row in rows], OPENED, now, runner_uid=runner.uid
    )
    messages = await follow_ups(conn, [row.run_id for row in rows], routings=("debug",))
    return [
        claimed_run(
            row,
            messages.get(row.run_id, []),
            event_payload=row.delivery_id is not None,
            mode="normal",
            session="debug",
        )
        for row in rows
    ]
