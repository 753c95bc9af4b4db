"""Run state transitions: the harness hook (claim, start, finish, ...) and cancellation of a run
and its non-terminal descendants.

Runners move runs through `gateway.platform.runners.execution`; `advance` is the direct hook (tests
and tools); every other state change goes through the API rules below. Each change is recorded
in the run's timeline.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import Conflict, NotCancellable, RunPending, RunTerminal
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.records import CANCELLABLE_TYPES, TERMINAL, load_run, lock_run
from gateway.store import tables as t
from gateway.store.types import utcnow

r = t.runs

# event -> (states it may leave, state it enters)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "pend": (frozenset({"QUEUED"}), "PENDING"),
    "release": (frozenset({"PENDING"}), "QUEUED"),
    "claim": (frozenset({"QUEUED"}), "CLAIMED"),
    "start": (frozenset({"QUEUED", "CLAIMED"}), "INPROGRESS"),
    "block": (frozenset({"INPROGRESS"}), "BLOCKED"),
    "unblock": (frozenset({"BLOCKED"}), "INPROGRESS"),
    "succeed": (frozenset({"INPROGRESS"}), "SUCCEEDED"),
    "fail": (frozenset({"CLAIMED", "INPROGRESS", "BLOCKED"}), "FAILED"),
    "error": (frozenset({"QUEUED", "CLAIMED", "INPROGRESS", "BLOCKED"}), "ERROR"),
}


async def advance(
    conn: AsyncConnection,
    run_id: str,
    event: str,
    *,
    session_id: str | None = None,
    session_link: str | None = None,
    message: str | None = None,
    error_code: str | None = None,
    retryable: bool = False,
) -> Row[Any]:
    """Harness hook: applies `event` to the run (409 when its state does not allow it)."""
    sources, target = TRANSITIONS[event]
    row = await lock_run(conn, run_id)
    if row.state not in sources:
        raise Conflict(f"state: cannot {event} a {row.state} run")
    now = utcnow()
    values: dict[str, Any] = {"state": target, "updated_at": now}
    if target == "INPROGRESS" and row.started_at is None:
        values["started_at"] = now
    if session_id is not None:
        values["session_id"] = session_id
    if session_link is not None:
        values["session_link"] = session_link
    if target == "FAILED":  # the moment a setup failure's debug window is measured from
        values["failed_at"] = now
    if event in ("fail", "error"):
        values["status_message"] = {
            "message": message or f"run ended with {target}",
            "error_code": error_code,
            "retryable": retryable,
        }
    await conn.execute(update(r).where(r.c.run_id == run_id).values(**values))
    await run_timeline.record(conn, [run_id], target, now, reason=message)
    return await load_run(conn, run_id)


def check_cancellable(row: Row[Any]) -> None:
    """400 when already ended, 409 while PENDING, 422 for run types the service cannot stop."""
    if row.state in TERMINAL:
        raise RunTerminal(f"run_id: run {row.run_id} already ended ({row.state})")
    if row.state == "PENDING":
        raise RunPending(f"run_id: run {row.run_id} is PENDING; retry after a moment")
    if row.run_type not in CANCELLABLE_TYPES:
        raise NotCancellable(
            f"run_id: {row.run_type} runs cannot be cancelled by the service; stop them where "
            "they run"
        )


async def cancel(conn: AsyncConnection, row: Row[Any]) -> list[str]:
    """Cancels the run and every non-terminal, cancellable descendant; returns their ids."""
    row = await lock_run(conn, row.run_id)
    check_cancellable(row)
    tree = (await conn.execute(select(r).where(r.c.root_run_id == row.root_run_id))).all()
    ids = [row.run_id] + [
        d.run_id
        for d in _descendants(row.run_id, list(tree))
        if d.state not in TERMINAL and d.run_type in CANCELLABLE_TYPES
    ]
    now = utcnow()
    await conn.execute(
        update(r)
        .where(r.c.run_id.in_(ids), r.c.state.not_in(TERMINAL))
        .values(state="CANCELLED", updated_at=now)
    )
    # a runner holding one of them learns of it at its next heartbeat (run_execution)
    await run_timeline.record(conn, ids, "CANCELLED", now, reason="cancelled")
    return ids


def _descendants(run_id: str, tree: list[Row[Any]]) -> list[Row[Any]]:
    children: dict[str | None, list[Row[Any]]] = {}
    for node in tree:
        children.setdefault(node.parent_run_id, []).append(node)
    found: list[Row[Any]] = []
    stack = list(children.get(run_id, []))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children.get(node.run_id, []))
    return found
