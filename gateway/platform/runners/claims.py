"""Claiming runs (docs/runs-and-tasks.md, "Runners"): a runner takes QUEUED runs of its team
(and factory, and worker) with a lease, oldest first, and keeps them by renewing the lease at
each heartbeat, which also tells it of a cancel or an interrupt and hands it the follow-ups sent
into its live session."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.runners.handover import (
    CLAIMED_COLUMNS,
    claimed_run,
    execution_mode,
    follow_ups,
    with_event_payload,
)
from gateway.platform.runners.leases import expire_leases, held_run
from gateway.platform.runners.models import MAX_CLAIM, ClaimedRun, HeartbeatResult
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.states import sole_source, target_of
from gateway.platform.runs.record.unclaimed import fail_unclaimed

r = t.runs


async def claim(
    conn: AsyncConnection,
    runner: Runner,
    lease_s: float,
    limit: int = 1,
    worker_wait_s: float | None = None,
) -> list[ClaimedRun]:
    """Up to `limit` QUEUED cloud runs of the runner's team (and factory), oldest first, each
    CLAIMED with a lease of `lease_s` seconds, with the follow-ups users sent them. With
    `worker_wait_s`, runs pinned to a worker that did not come in time fail first."""
    await expire_leases(conn)
    if worker_wait_s is not None:
        await fail_unclaimed(conn, worker_wait_s)
    return await claim_runs(conn, runner, await _pick(conn, runner, limit), lease_s)


async def claim_runs(
    conn: AsyncConnection, runner: Runner, run_ids: list[str], lease_s: float
) -> list[ClaimedRun]:
    """The runs of `run_ids` that may be claimed (QUEUED), claimed by `runner`: the step of
    `claim` after it picked them (the tests' runner takes the runs it is told to this way)."""
    if not run_ids:
        return []
    now = utcnow()
    claimed = await conn.execute(
        update(r)
        .where(r.c.run_id.in_(run_ids), r.c.state == sole_source("claim"))
        .values(
            state=target_of("claim"),
            runner_uid=runner.uid,
            lease_expires_at=now + timedelta(seconds=lease_s),
            lease_renewed_at=now,
            attempts=r.c.attempts + 1,
            updated_at=now,
        )
        .returning(*CLAIMED_COLUMNS)  # read back in the same statement
    )
    rows = sorted(claimed.all(), key=lambda row: (row.created_at, row.run_id))
    claimed_ids = [row.run_id for row in rows]
    await run_timeline.record(conn, claimed_ids, target_of("claim"), now, runner_uid=runner.uid)
    started_by_deliveries = [
        (row.run_id, row.conversation_id) for row in rows if row.delivery_id is not None
    ]
    payloads = await with_event_payload(conn, started_by_deliveries)
    messages = await follow_ups(conn, claimed_ids)
    return [
        claimed_run(
            row,
            messages.get(row.run_id, []),
            event_payload=row.run_id in payloads,
            mode=execution_mode(row.mode, messages.get(row.run_id, [])),
        )
        for row in rows
    ]


async def _pick(conn: AsyncConnection, runner: Runner, limit: int) -> list[str]:
    """The runs `claim` takes, locked (skipping those another claim locked)."""
    pick = select(r.c.run_id).where(
        r.c.state == sole_source("claim"), r.c.team_uid == runner.team_uid, r.c.run_type == "cloud"
    )
    if runner.factory_uid is not None:
        pick = pick.where(r.c.factory_uid == runner.factory_uid)
    # a run pinned to a worker goes to that worker alone; the pool takes the others
    pick = pick.where(
        r.c.worker_host.is_(None)
        if runner.worker_id is None
        else r.c.worker_host == runner.worker_id
    )
    pick = (
        pick.order_by(r.c.created_at, r.c.run_id)
        .limit(max(1, min(limit, MAX_CLAIM)))
        .with_for_update(skip_locked=True)
    )
    # picked first, then claimed: inside the UPDATE, PostgreSQL may run the LIMITed subquery
    # more than once and claim more than `limit` runs
    return list((await conn.execute(pick)).scalars())


async def heartbeat(
    conn: AsyncConnection, runner: Runner, run_id: str, lease_s: float
) -> HeartbeatResult:
    """Renews the lease; says whether the run was cancelled or interrupted since the last one,
    and hands over the follow-ups sent into its live session since then."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    since = run.lease_renewed_at or run.created_at
    interrupts = await conn.execute(
        select(func.count())
        .select_from(t.run_messages)
        .where(
            t.run_messages.c.run_id == run_id,
            t.run_messages.c.routing == "interrupt",
            t.run_messages.c.created_at > since,
        )
    )
    # into a live session: injected follow-ups; into a debug session: the debug ones
    routings = ("debug",) if run.debug_session == "open" else ("injected",)
    injected = await follow_ups(conn, [run_id], since=since, routings=routings)
    expires = now + timedelta(seconds=lease_s)
    await conn.execute(
        update(r).where(r.c.run_id == run_id).values(lease_expires_at=expires, lease_renewed_at=now)
    )
    return HeartbeatResult(
        run_id=run_id,
        state=run.state,
        lease_expires_at=expires,
        cancel_requested=run.state == "CANCELLED",
        interrupt_requested=bool(interrupts.scalar_one()),
        messages=injected.get(run_id, []),
    )
