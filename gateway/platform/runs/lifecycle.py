"""Run state transitions: the harness hook (claim, start, finish, ...) and cancellation of a run
and its non-terminal descendants.

Runners move runs through `gateway.platform.runners.execution`; `advance` is the direct hook (tests
and tools); every other state change goes through the API rules below. Each change is recorded
in the run's timeline.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import Conflict, NotCancellable, RunPending, RunTerminal
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.models import CANCELLABLE_TYPES, RunRecord, StatusMessage
from gateway.platform.runs.records import TERMINAL, json_column, load_run, lock_run
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
) -> RunRecord:
    """Harness hook: applies `event` to the run (409 when its state does not allow it)."""
    sources, target = TRANSITIONS[event]
    run = await lock_run(conn, run_id)
    if run.state not in sources:
        raise Conflict(f"state: cannot {event} a {run.state} run")
    now = utcnow()
    starts = target == "INPROGRESS" and run.started_at is None
    status = None
    if event in ("fail", "error"):
        status = StatusMessage(message or f"run ended with {target}", error_code, retryable)
    await conn.execute(
        update(r)
        .where(r.c.run_id == run_id)
        .values(
            state=target,
            updated_at=now,
            # a column set to itself keeps its value
            started_at=now if starts else r.c.started_at,
            session_id=r.c.session_id if session_id is None else session_id,
            session_link=r.c.session_link if session_link is None else session_link,
            # the moment a setup failure's debug window is measured from
            failed_at=now if target == "FAILED" else r.c.failed_at,
            status_message=r.c.status_message if status is None else json_column(status),
        )
    )
    await run_timeline.record(conn, [run_id], target, now, reason=message)
    return await load_run(conn, run_id)


def check_cancellable(run: RunRecord) -> None:
    """400 when already ended, 409 while PENDING, 422 for run types the service cannot stop."""
    if run.state in TERMINAL:
        raise RunTerminal(f"run_id: run {run.run_id} already ended ({run.state})")
    if run.state == "PENDING":
        raise RunPending(f"run_id: run {run.run_id} is PENDING; retry after a moment")
    if run.run_type not in CANCELLABLE_TYPES:
        raise NotCancellable(
            f"run_id: {run.run_type} runs cannot be cancelled by the service; stop them where "
            "they run"
        )


async def cancel(conn: AsyncConnection, run: RunRecord) -> list[str]:
    """Cancels the run and every non-terminal, cancellable descendant; returns their ids."""
    run = await lock_run(conn, run.run_id)
    check_cancellable(run)
    query = select(r.c.run_id, r.c.parent_run_id, r.c.state, r.c.run_type)
    tree = [
        _Node(*node) for node in await conn.execute(query.where(r.c.root_run_id == run.root_run_id))
    ]
    ids = [run.run_id] + [
        d.run_id
        for d in _descendants(run.run_id, tree)
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


class _Node(NamedTuple):
    """A run of a tree, as cancelling it reads it."""

    run_id: str
    parent_run_id: str | None
    state: str
    run_type: str


def _descendants(run_id: str, tree: list[_Node]) -> list[_Node]:
    children: dict[str | None, list[_Node]] = {}
    for node in tree:
        children.setdefault(node.parent_run_id, []).append(node)
    found: list[_Node] = []
    stack = list(children.get(run_id, []))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(children.get(node.run_id, []))
    return found
