"""Debug sessions of failed runs (spec 3.1; docs/runs-and-tasks.md, "Debug sessions").

A follow-up to a run that failed setting up its environment, within the debug window, goes to
the runner that ran it, whose retained session hosts a debug agent: the run stays FAILED with
its status message. The first such follow-up requests a session of that runner (it must have
registered with `debug_sessions` and be online; otherwise no session can be opened and the
follow-up is refused, 409, never stored); the runner claims it as it claims runs (`session`:
`debug`, the run FAILED), gets later follow-ups at its heartbeats, and ends it with a finish,
which leaves the run as it was. Each step is a timeline entry (DEBUG_REQUESTED, DEBUG_OPENED,
DEBUG_ENDED: entries, not states the run enters).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import DebugUnavailable
from gateway.platform.runners.execution import (
    CLAIMED_COLUMNS,
    DEBUG_ENDED,
    Runner,
    claimed_run,
    follow_ups,
)
from gateway.platform.runners.models import ClaimedRun
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.models import RunRecord
from gateway.store import tables as t
from gateway.store.types import utcnow

REQUESTED, OPENED = "DEBUG_REQUESTED", "DEBUG_OPENED"
r, e = t.runs, t.run_events


async def request_session(conn: AsyncConnection, run: RunRecord, lease_s: float) -> None:
    """Before a debug follow-up is stored: a session of the runner that failed the run is
    requested (or is already), else DebugUnavailable says why none can be opened."""
    if run.debug_session is not None:
        return  # requested or open: the follow-up joins it
    runner_uid = await _failing_runner(conn, run.run_id)
    if runner_uid is None:
        raise DebugUnavailable(
            f"run_id: no debug session can be opened for run {run.run_id}: no runner reported "
            "its failure, so no session of it was retained; the follow-up was not delivered"
        )
    found = (await conn.execute(select(t.runners).where(t.runners.c.uid == runner_uid))).first()
    now = utcnow()
    if found is None or not found.debug_sessions:
        raise DebugUnavailable(
            f"run_id: no debug session can be opened for run {run.run_id}: its runner "
            f"{runner_uid} does not open debug sessions; the follow-up was not delivered"
        )
    if now - found.last_seen_at > timedelta(seconds=lease_s):
        raise DebugUnavailable(
            f"run_id: no debug session can be opened for run {run.run_id}: its runner "
            f"{runner_uid} is offline (last seen {found.last_seen_at.isoformat()}); the "
            "follow-up was not delivered"
        )
    await conn.execute(
        update(r)
        .where(r.c.run_id == run.run_id)
        .values(debug_session="requested", debug_runner_uid=runner_uid)
    )
    await run_timeline.record(conn, [run.run_id], REQUESTED, now, runner_uid=runner_uid)


async def _failing_runner(conn: AsyncConnection, run_id: str) -> str | None:
    """The runner that reported the run's latest failure."""
    query = (
        select(e.c.runner_uid)
        .where(e.c.run_id == run_id, e.c.state == "FAILED")
        .order_by(e.c.at.desc(), e.c.id.desc())
        .limit(1)
    )
    found: str | None = (await conn.execute(query)).scalar()
    return found


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


def ended_entry(
    run_id: str, runner_uid: str | None, at: datetime, reason: str
) -> run_timeline.Entry:
    """The timeline entry of a debug session that ends (finished, given back, lease lost)."""
    return run_timeline.entry(run_id, DEBUG_ENDED, at, runner_uid=runner_uid, reason=reason)
