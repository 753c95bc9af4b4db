"""Cancelling a run: it and its cancellable descendants that have not ended become CANCELLED
(the `cancel` transition of states.py), each change recorded in their timelines. A runner holding
one of them learns of it at its next heartbeat."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import NotCancellable, RunPending, RunTerminal
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import CANCELLABLE_TYPES, RunRecord, StatusMessage
from gateway.platform.runs.record.states import TERMINAL, allows, next_state, sources
from gateway.platform.runs.record.store import json_column, lock_run

r = t.runs
# what a cancelled run's status says (not what its runner last reported, such as "running")
CANCELLED_STATUS = StatusMessage("cancelled", None, False)


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
    # the tree's runs below its root (ix_runs_root_run_id holds those only)
    query = select(r.c.run_id, r.c.parent_run_id, r.c.state, r.c.run_type).where(
        r.c.root_run_id == run.root_run_id, r.c.parent_run_id.is_not(None)
    )
    tree = [_Node(*node) for node in await conn.execute(query)]
    ids = [run.run_id] + [
        d.run_id
        for d in _descendants(run.run_id, tree)
        if allows(d.state, "cancel") and d.run_type in CANCELLABLE_TYPES
    ]
    now = utcnow()
    cancelled = next_state(run.state, "cancel")
    await conn.execute(
        update(r)
        .where(r.c.run_id.in_(ids), r.c.state.in_(sources("cancel")))
        .values(state=cancelled, status_message=json_column(CANCELLED_STATUS), updated_at=now)
    )
    await run_timeline.record(conn, ids, cancelled, now, reason="cancelled")
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
