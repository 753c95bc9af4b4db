"""Leases: a runner holds the runs it claimed while it renews their leases. Every call about a
run checks that the caller still holds it: a run finished, taken back after its lease ran out,
or given to another runner answers 409 `lease_lost`, never a second state change.

A lease that is not renewed returns the run to QUEUED for another runner; after MAX_ATTEMPTS
claims the run is FAILED instead (`lease_expired`). Expired leases are collected whenever a
runner claims or touches a run, so with runners polling, a dead runner's runs move on within a
lease and a poll. Until its expired lease is collected, a run is still its runner's: that
runner's own calls about it (a late heartbeat, which renews the lease, or its finish) do not
collect it but go through, as nobody else can have the run yet. A runner that stops gives its
runs back (`release`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import LeaseLost, NotFound, ServiceError
from gateway.platform.runners.models import RunStatus
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import RunRecord, StatusMessage
from gateway.platform.runs.record.states import TERMINAL, allows, next_state, target_of
from gateway.platform.runs.record.store import json_column, load_run

MAX_ATTEMPTS = 3  # claims of one run in all; a third expired lease fails it
r = t.runs
# what a run held by no runner has of its lease
FREE = {"runner_uid": None, "lease_expires_at": None, "lease_renewed_at": None}
# a run without a debug session (runners/debug_sessions.py), and the timeline entry of one ending
NO_DEBUG = {"debug_session": None, "debug_runner_uid": None}
DEBUG_ENDED = "DEBUG_ENDED"
Expired = Row[Any, Any, Any, Any, Any]  # what expire_leases reads of a run: id, state, attempts...


async def expire_leases(
    conn: AsyncConnection, holder: str | None = None, spared: Collection[str] = ()
) -> None:
    """Runs whose lease ran out: back to QUEUED, or FAILED after MAX_ATTEMPTS claims; a run
    that ended meanwhile (cancelled) only loses its holder. The runs of `spared` that runner
    `holder` holds are left as they are (its own call about them collects the others)."""
    now = utcnow()
    query = (
        select(r.c.run_id, r.c.state, r.c.attempts, r.c.runner_uid, r.c.debug_session)
        .where(r.c.lease_expires_at.is_not(None), r.c.lease_expires_at < now)
        .with_for_update(skip_locked=True)
    )
    expired = [
        row
        for row in (await conn.execute(query)).all()
        if not (row.runner_uid == holder and row.run_id in spared)
    ]
    ended = [row for row in expired if row.state in TERMINAL]
    again = [row for row in expired if row.attempts < MAX_ATTEMPTS and allows(row.state, "release")]
    last = [row for row in expired if row.attempts >= MAX_ATTEMPTS and allows(row.state, "expire")]
    if ended:  # a debug session among them is over
        await _free_ended(conn, ended, now)
    if again:  # their next attempts are another runner's
        await conn.execute(
            update(r)
            .where(r.c.run_id.in_([row.run_id for row in again]))
            .values(state=target_of("release"), updated_at=now, **FREE)
        )
    await run_timeline.record_entries(conn, [_requeued(row, now) for row in again])
    for row in last:
        await _fail(conn, row, now)


async def _free_ended(conn: AsyncConnection, ended: Sequence[Expired], now: datetime) -> None:
    await conn.execute(
        update(r).where(r.c.run_id.in_([row.run_id for row in ended])).values(**FREE, **NO_DEBUG)
    )
    lost = [row for row in ended if row.debug_session == "open"]
    await run_timeline.record_entries(
        conn, [ended_entry(row.run_id, row.runner_uid, now, "lease expired") for row in lost]
    )


def _requeued(row: Expired, now: datetime) -> run_timeline.Entry:
    reason = f"lease expired (attempt {row.attempts} of {MAX_ATTEMPTS})"
    requeued = target_of("release")
    return run_timeline.entry(row.run_id, requeued, now, runner_uid=row.runner_uid, reason=reason)


async def _fail(conn: AsyncConnection, row: Expired, now: datetime) -> None:
    """The run's last lease expired: FAILED, retryable by a follow-up."""
    message = (
        f"the run's lease expired {row.attempts} times: its runners stopped renewing it "
        "(crashed, killed or cut off)"
    )
    failed = next_state(row.state, "expire")
    await conn.execute(
        update(r)
        .where(r.c.run_id == row.run_id)
        .values(
            state=failed,
            failed_at=now,
            updated_at=now,
            status_message=json_column(StatusMessage(message, "lease_expired", True)),
            **FREE,
        )
    )
    await run_timeline.record(
        conn, [row.run_id], failed, now, runner_uid=row.runner_uid, reason=message
    )


def ended_entry(
    run_id: str, runner_uid: str | None, at: datetime, reason: str
) -> run_timeline.Entry:
    """The timeline entry of a debug session that ends (finished, given back, lease lost)."""
    return run_timeline.entry(run_id, DEBUG_ENDED, at, runner_uid=runner_uid, reason=reason)


async def held_run(conn: AsyncConnection, runner: Runner, run_id: str) -> RunRecord:
    """The run, locked, while `runner` holds it; 404 outside its team, 409 `lease_lost` when
    it finished, was taken back or is held by another runner."""
    held = (await held_runs(conn, runner, [run_id]))[run_id]
    if isinstance(held, ServiceError):
        raise held
    return held


async def held_runs(
    conn: AsyncConnection, runner: Runner, run_ids: list[str]
) -> dict[str, RunRecord | ServiceError]:
    """`held_run` for several runs at once (one SELECT): each run, locked, or the error a call
    about it alone would answer. A run whose lease ran out is still the caller's while nobody
    collected it: the caller's call does not (nobody else can have it yet)."""
    query = select(r).where(r.c.run_id.in_(run_ids)).order_by(r.c.run_id).with_for_update()
    found = await _locked(conn, query)
    now = utcnow()
    leases = [run.lease_expires_at for run in found.values() if run.lease_expires_at is not None]
    if any(expires < now for expires in leases):
        # expired leases collected now, but for the caller's own runs among these
        await expire_leases(conn, holder=runner.uid, spared=set(run_ids))
        found = await _locked(conn, query)
    return {run_id: _held_by(found.get(run_id), runner, run_id) for run_id in run_ids}


async def _locked(conn: AsyncConnection, query: Select[Any]) -> dict[str, RunRecord]:
    return {row.run_id: RunRecord.from_row(row) for row in await conn.execute(query)}


def _held_by(run: RunRecord | None, runner: Runner, run_id: str) -> RunRecord | ServiceError:
    if run is None or run.team_uid != runner.team_uid:
        return NotFound(f"run_id: {run_id} not found")
    if run.runner_uid != runner.uid:
        return lease_lost(runner, run_id, run.state)
    return run


def lease_lost(runner: Runner, run_id: str, state: str) -> LeaseLost:
    return LeaseLost(
        f"run_id: runner {runner.uid} does not hold run {run_id} (it is {state}; "
        "finished, taken back after its lease expired, or claimed by another runner)"
    )


async def release(conn: AsyncConnection, runner: Runner, run_id: str, reason: str) -> RunStatus:
    """Gives a held run back (the runner is stopping): QUEUED again for another runner; the
    claim still counts as an attempt. A run that ended (cancelled, or failed with a debug
    session open) only loses its holder."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    requeued = allows(run.state, "release")
    state = run.state
    if requeued:
        state = next_state(run.state, "release")
        await run_timeline.record(conn, [run_id], state, now, runner_uid=runner.uid, reason=reason)
    elif run.debug_session == "open":
        await run_timeline.record_entries(conn, [ended_entry(run_id, runner.uid, now, reason)])
    await conn.execute(
        update(r)
        .where(r.c.run_id == run_id)
        .values(state=state, updated_at=now, **FREE, **NO_DEBUG)
    )
    return RunStatus.of(await load_run(conn, run_id))
