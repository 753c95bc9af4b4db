"""The run timeline: every state a run entered and when. Its creation (QUEUED at created_at) is
implied; later changes are rows of `run_events`, written with the change they record."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.platform.inbox import notifications as inbox
from gateway.store import tables as t

e = t.run_events


async def record(
    conn: AsyncConnection,
    run_ids: Iterable[str],
    state: str,
    at: datetime,
    *,
    runner_uid: str | None = None,
    reason: str | None = None,
) -> None:
    """`state` entered at `at` by each of `run_ids`."""
    await record_entries(
        conn, [entry(run_id, state, at, runner_uid=runner_uid, reason=reason) for run_id in run_ids]
    )


def entry(
    run_id: str, state: str, at: datetime, *, runner_uid: str | None, reason: str | None = None
) -> dict[str, Any]:
    """One timeline row: `run_id` entered `state` at `at`."""
    return {
        "id": ids.new_id("evt"),
        "run_id": run_id,
        "state": state,
        "at": at,
        "runner_uid": runner_uid,
        "reason": None if reason is None else reason[:500],
    }


async def record_entries(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Timeline rows made by `entry`, of any runs and states, in one INSERT."""
    if not rows:
        return
    await conn.execute(insert(e), rows)
    # the factory inbox hears of every change here, in the same transaction (only the states it
    # reports cost anything)
    changes: dict[tuple[str, datetime, str | None], list[str]] = {}
    for row in rows:
        if row["state"] in inbox.RUN_KINDS:
            changes.setdefault((row["state"], row["at"], row["reason"]), []).append(row["run_id"])
    for (state, at, reason), run_ids in changes.items():
        await inbox.on_run_states(conn, run_ids, state, at, reason)


async def timeline(conn: AsyncConnection, run: Row[Any]) -> list[dict[str, Any]]:
    """The run's states in order: QUEUED at its creation, then each recorded change."""
    query = select(e).where(e.c.run_id == run.run_id).order_by(e.c.at, e.c.id)
    events = [{"state": "QUEUED", "at": run.created_at, "runner_uid": None, "reason": "created"}]
    for row in (await conn.execute(query)).all():
        events.append(
            {"state": row.state, "at": row.at, "runner_uid": row.runner_uid, "reason": row.reason}
        )
    return events
