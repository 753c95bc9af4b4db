"""Runs pinned to a self-hosted worker that does not come for them (docs/runs-and-tasks.md#pinned-
runs-self-hosted-workers): a run whose `worker_host` names a worker waits QUEUED for a runner
registered under that worker id. When it has waited longer than GATEWAY_WORKER_WAIT_S and no
runner of that worker id was seen in that time, it ends FAILED (`worker_unavailable`,
retryable: a follow-up queues it again). Collected whenever a runner claims and by the
scheduler's tick, so it happens with no runner polling at all."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import and_, exists, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import WORKER_UNAVAILABLE, StatusMessage
from gateway.platform.runs.record.states import sole_source, target_of
from gateway.platform.runs.record.store import json_column

r, w = t.runs, t.runners


async def fail_unclaimed(conn: AsyncConnection, wait_s: float) -> list[str]:
    """Fails the pinned runs that waited over `wait_s` for a worker not seen in that time; their
    ids."""
    now = utcnow()
    since = now - timedelta(seconds=wait_s)
    seen = exists().where(
        and_(
            w.c.team_uid == r.c.team_uid,
            w.c.worker_id == r.c.worker_host,
            w.c.last_seen_at >= since,
        )
    )
    query = select(r.c.run_id, r.c.worker_host).where(
        r.c.state == sole_source("abandon"),
        r.c.worker_host.is_not(None),
        r.c.updated_at < since,  # QUEUED since then: made, resumed or given back
        ~seen,
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True, of=r)
    rows = (await conn.execute(query)).all()
    failed = target_of("abandon")
    for row in rows:
        message = (
            f"no self-hosted worker {row.worker_host!r} claimed the run within {wait_s:g} s "
            f"(GATEWAY_WORKER_WAIT_S): start `gateway runner --worker-id {row.worker_host}` "
            "and send a follow-up to queue it again, or pin it elsewhere"
        )
        done = await conn.execute(
            update(r)
            .where(r.c.run_id == row.run_id, r.c.state == sole_source("abandon"))
            .values(
                state=failed,
                failed_at=now,
                updated_at=now,
                status_message=json_column(StatusMessage(message, WORKER_UNAVAILABLE, True)),
            )
        )
        if done.rowcount:
            await run_timeline.record(conn, [row.run_id], failed, now, reason=message)
    return [row.run_id for row in rows]
