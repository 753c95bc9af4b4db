"""Reading runs: a run by id (locked, or as a caller may see it), the run a path names, a
conversation's current run. Runs leave the store as `models.RunRecord`; JSON columns are written
from their Structs with `json_column`. New runs are written by runs/creation/new_runs.py alone."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.kernel.errors import NotFound
from gateway.platform.runs.record.models import RunArtifact, RunRecord

r = t.runs
# what an operation on a run the caller names may answer: one they cannot see is a 404, never a
# 403 (no existence leak)
RUN_ERRORS = (400, 401, 404)


def json_column(value: msgspec.Struct | list[RunArtifact] | None) -> Any:
    """A Struct (or a list of them) as a JSON column holds it."""
    return None if value is None else msgspec.to_builtins(value)


async def load_run(conn: AsyncConnection, run_id: str) -> RunRecord:
    run = await find_run(conn, run_id)
    if run is None:
        raise NotFound(f"run_id: {run_id} not found")
    return run


async def find_run(conn: AsyncConnection, run_id: str) -> RunRecord | None:
    row = (await conn.execute(select(r).where(r.c.run_id == run_id))).first()
    return None if row is None else RunRecord.from_row(row)


async def lock_run(conn: AsyncConnection, run_id: str) -> RunRecord:
    """The run, re-read under a row lock (`lock_runs`), so state changes decided on it cannot
    interleave; NotFound when it does not exist."""
    run = (await lock_runs(conn, (run_id,))).get(run_id)
    if run is None:
        raise NotFound(f"run_id: {run_id} not found")
    return run


LOCK_CHUNK = 500  # run ids per statement of `lock_runs`


async def lock_runs(conn: AsyncConnection, run_ids: Collection[str]) -> dict[str, RunRecord]:
    """The runs of `run_ids` that exist, re-read under row locks (PostgreSQL; SQLite has one
    writer anyway), a statement per LOCK_CHUNK of them (an evaluator's batch follows up dozens
    of runs), in run id order: two transactions locking overlapping sets take their locks in
    one order."""
    wanted = sorted(set(run_ids))
    found: dict[str, RunRecord] = {}
    for start in range(0, len(wanted), LOCK_CHUNK):
        query = select(r).where(r.c.run_id.in_(wanted[start : start + LOCK_CHUNK]))
        query = query.order_by(r.c.run_id)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        for row in await conn.execute(query):
            found[row.run_id] = RunRecord.from_row(row)
    return found


def can_view(principal: Principal, run: RunRecord) -> bool:
    """Runs are visible to their creator and to every member of the run's team."""
    return run.creator_uid == principal.uid or run.team_uid in principal.team_uids


async def visible_run(conn: AsyncConnection, principal: Principal, run_id: str) -> RunRecord:
    """The run, or 404 when it does not exist or the caller may not see it (no existence leak)."""
    run = await find_run(conn, run_id)
    if run is None or not can_view(principal, run):
        raise NotFound(f"run_id: {run_id} not found")
    return run


async def newest_root_run(conn: AsyncConnection, conversation_id: str) -> RunRecord | None:
    """The conversation's current top-level run: its newest run without a parent."""
    query = (
        select(r)
        .where(r.c.conversation_id == conversation_id, r.c.parent_run_id.is_(None))
        .order_by(r.c.created_at.desc(), r.c.run_id.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else RunRecord.from_row(row)


async def conversation_run(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> RunRecord:
    """The conversation's newest top-level run; 404 when none or the caller cannot see it."""
    run = await newest_root_run(conn, conversation_id)
    if run is None or not can_view(principal, run):
        raise NotFound(f"conversation_id: {conversation_id} not found")
    return run


async def addressed_run(
    conn: AsyncConnection, principal: Principal, path: Mapping[str, str]
) -> RunRecord:
    """The run a path names (its parameters `path`): its `run_id`, else its `conversation_id`'s
    newest top-level run. Follow-ups, interrupts and attachments are addressed either way."""
    run_id = path.get("run_id")
    if run_id is not None:
        return await visible_run(conn, principal, run_id)
    return await conversation_run(conn, principal, path["conversation_id"])
