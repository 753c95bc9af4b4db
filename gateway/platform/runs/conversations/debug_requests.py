"""Requesting a debug session of a failed run (spec 3.1; docs/runs-and-tasks.md, "Debug
sessions"): the first debug follow-up to a run that failed setting up its environment asks the
runner that failed it for a session, which that runner claims as it claims runs
(gateway/platform/runners/debug_sessions.py). Nothing is requested, and the follow-up is refused
(409), when no session can be opened: no runner reported the failure, the runner does not open
debug sessions, or it is offline."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import DebugUnavailable
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import RunRecord

REQUESTED = "DEBUG_REQUESTED"  # a timeline entry, not a state the run enters
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
