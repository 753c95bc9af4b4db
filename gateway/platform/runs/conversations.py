"""Follow-ups, interrupts and prepared attachments, addressed by run or by conversation.

A conversation is served by its newest top-level run. Follow-ups are routed by the run's state:
QUEUED/PENDING -> "queued" (ahead of the start), CLAIMED/INPROGRESS/BLOCKED -> "injected" into the
live session (a BLOCKED run resumes INPROGRESS), ended -> "resumed" (a new execution: the run is
QUEUED again), except a FAILED environment-setup run inside its debug window -> "debug" (stays
FAILED, status message unchanged). The window runs from the failure (`failed_at`), so debug
follow-ups do not extend it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.errors import NotFound, RunNotLive, UnknownAttachment
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.records import (
    CANCELLABLE_TYPES,
    LIVE,
    can_view,
    lock_run,
    newest_root_run,
)
from gateway.store import tables as t
from gateway.store.types import utcnow

DEBUG_WINDOW = timedelta(hours=1)
SETUP_FAILURE = "environment_setup_failed"


@dataclass(frozen=True, slots=True)
class FollowUp:
    message: str
    attachments: tuple[str, ...] = ()
    mode: str | None = None


async def conversation_run(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> Row[Any]:
    """The conversation's newest top-level run; 404 when none or the caller cannot see it."""
    row = await newest_root_run(conn, conversation_id)
    if row is None or not can_view(principal, row):
        raise NotFound(f"conversation_id: {conversation_id} not found")
    return row


def _routing(row: Row[Any]) -> tuple[str, str]:
    """(routing, next state) of a follow-up to this run."""
    if row.state in ("QUEUED", "PENDING"):
        return "queued", row.state
    if row.state in LIVE or row.state == "BLOCKED":
        return "injected", "INPROGRESS" if row.state == "BLOCKED" else row.state
    status = row.status_message or {}
    # measured from the failure, not from updated_at, which each debug follow-up moves (a run
    # made FAILED by a path that does not record failed_at falls back to updated_at)
    failed_at = row.failed_at or row.updated_at
    if (
        row.state == "FAILED"
        and status.get("error_code") == SETUP_FAILURE
        and utcnow() - failed_at <= DEBUG_WINDOW
    ):
        return "debug", "FAILED"
    return "resumed", "QUEUED"


async def follow_up(conn: AsyncConnection, row: Row[Any], request: FollowUp) -> dict[str, Any]:
    row = await lock_run(conn, row.run_id)
    await _check_attachments(conn, row, request.attachments)
    routing, state = _routing(row)
    now = utcnow()
    await conn.execute(
        insert(t.run_messages).values(
            id=ids.new_id("msg"),
            run_id=row.run_id,
            message=request.message,
            attachments=list(request.attachments) or None,
            # a message injected into a live session runs in that session's mode
            mode=None if routing in ("injected", "debug") else request.mode,
            routing=routing,
            created_at=now,
        )
    )
    values: dict[str, Any] = {"state": state, "updated_at": now}
    if routing == "resumed":  # a new execution of the same run
        values |= {"started_at": None, "status_message": None, "failed_at": None}
    await conn.execute(update(t.runs).where(t.runs.c.run_id == row.run_id).values(**values))
    if state != row.state:  # BLOCKED -> INPROGRESS, or ended -> QUEUED: a change of state
        await run_timeline.record(conn, [row.run_id], state, now, reason=f"follow-up ({routing})")
    return {"run_id": row.run_id, "state": state, "routing": routing}


async def _check_attachments(
    conn: AsyncConnection, row: Row[Any], attachment_ids: tuple[str, ...]
) -> None:
    if not attachment_ids:
        return
    a = t.attachments
    query = select(a.c.attachment_id).where(
        a.c.attachment_id.in_(attachment_ids), a.c.run_id == row.run_id
    )
    known = set((await conn.execute(query)).scalars())
    for i, attachment_id in enumerate(attachment_ids):
        if attachment_id not in known:
            raise UnknownAttachment(
                f"attachments[{i}]: {attachment_id} was not prepared for run {row.run_id}, "
                "the newest run of this conversation; prepare the attachments again"
            )


async def interrupt(conn: AsyncConnection, row: Row[Any]) -> dict[str, Any]:
    """Records an interrupt of the current turn for the harness; the run keeps its state."""
    if row.state not in LIVE or row.run_type not in CANCELLABLE_TYPES:
        raise RunNotLive(
            f"run_id: only a live run (CLAIMED or INPROGRESS) on the service's own harness can "
            f"be interrupted; this one is {row.state}"
        )
    await conn.execute(
        insert(t.run_messages).values(
            id=ids.new_id("msg"),
            run_id=row.run_id,
            message="",
            routing="interrupt",
            created_at=utcnow(),
        )
    )
    return {"run_id": row.run_id, "state": row.state, "interrupted": True}


async def prepare_attachments(
    conn: AsyncConnection, row: Row[Any], names: list[str | None]
) -> dict[str, Any]:
    """Attachment ids for the given run (the conversation's newest, at this moment)."""
    now = utcnow()
    prepared = [{"attachment_id": ids.new_id("att"), "name": name} for name in names]
    await conn.execute(
        insert(t.attachments),
        [
            {
                "attachment_id": p["attachment_id"],
                "conversation_id": row.conversation_id,
                "run_id": row.run_id,
                "file_name": p["name"],
                "created_at": now,
            }
            for p in prepared
        ],
    )
    return {"attachments": prepared, "run_id": row.run_id, "conversation_id": row.conversation_id}
