"""Follow-ups, interrupts and prepared attachments, addressed by run or by conversation.

A conversation is served by its newest top-level run. Follow-ups are routed by the run's state:
QUEUED/PENDING -> "queued" (ahead of the start), CLAIMED/INPROGRESS/BLOCKED -> "injected" into the
live session (a BLOCKED run resumes INPROGRESS), ended -> "resumed" (a new execution: the run is
QUEUED again), except a FAILED environment-setup run inside its debug window -> "debug" (stays
FAILED, status message unchanged). The window runs from the failure (`failed_at`), so debug
follow-ups do not extend it.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.identities import Principal
from gateway.errors import NotFound, RunNotLive, UnknownAttachment
from gateway.platform.runs import timeline as run_timeline
from gateway.platform.runs.conversation_models import (
    AttachmentsPrepare,
    FollowUp,
    FollowUpResult,
    InterruptResult,
    PreparedAttachment,
    PreparedAttachments,
    Routing,
)
from gateway.platform.runs.models import CANCELLABLE_TYPES, RunRecord, RunState
from gateway.platform.runs.records import LIVE, can_view, lock_run, newest_root_run
from gateway.store import tables as t
from gateway.store.types import utcnow

DEBUG_WINDOW = timedelta(hours=1)
SETUP_FAILURE = "environment_setup_failed"
r = t.runs


async def conversation_run(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> RunRecord:
    """The conversation's newest top-level run; 404 when none or the caller cannot see it."""
    run = await newest_root_run(conn, conversation_id)
    if run is None or not can_view(principal, run):
        raise NotFound(f"conversation_id: {conversation_id} not found")
    return run


def _routing(run: RunRecord) -> tuple[Routing, RunState]:
    """(routing, next state) of a follow-up to this run."""
    if run.state in ("QUEUED", "PENDING"):
        return "queued", run.state
    if run.state in LIVE or run.state == "BLOCKED":
        return "injected", "INPROGRESS" if run.state == "BLOCKED" else run.state
    error_code = None if run.status_message is None else run.status_message.error_code
    # measured from the failure, not from updated_at, which each debug follow-up moves (a run
    # made FAILED by a path that does not record failed_at falls back to updated_at)
    failed_at = run.failed_at or run.updated_at
    if (
        run.state == "FAILED"
        and error_code == SETUP_FAILURE
        and utcnow() - failed_at <= DEBUG_WINDOW
    ):
        return "debug", "FAILED"
    return "resumed", "QUEUED"


async def follow_up(conn: AsyncConnection, run: RunRecord, request: FollowUp) -> FollowUpResult:
    run = await lock_run(conn, run.run_id)
    attachments = request.attachments or []
    await _check_attachments(conn, run, attachments)
    routing, state = _routing(run)
    now = utcnow()
    await conn.execute(
        insert(t.run_messages).values(
            id=ids.new_id("msg"),
            run_id=run.run_id,
            message=request.message,
            attachments=attachments or None,
            # a message injected into a live session runs in that session's mode
            mode=None if routing in ("injected", "debug") else request.mode,
            routing=routing,
            created_at=now,
        )
    )
    resumed = routing == "resumed"  # a new execution of the same run
    await conn.execute(  # (a column set to itself keeps its value)
        update(r)
        .where(r.c.run_id == run.run_id)
        .values(
            state=state,
            updated_at=now,
            started_at=None if resumed else r.c.started_at,
            status_message=None if resumed else r.c.status_message,
            failed_at=None if resumed else r.c.failed_at,
        )
    )
    if state != run.state:  # BLOCKED -> INPROGRESS, or ended -> QUEUED: a change of state
        await run_timeline.record(conn, [run.run_id], state, now, reason=f"follow-up ({routing})")
    return FollowUpResult(run.run_id, state, routing)


async def _check_attachments(
    conn: AsyncConnection, run: RunRecord, attachment_ids: list[str]
) -> None:
    if not attachment_ids:
        return
    a = t.attachments
    query = select(a.c.attachment_id).where(
        a.c.attachment_id.in_(attachment_ids), a.c.run_id == run.run_id
    )
    known = set((await conn.execute(query)).scalars())
    for i, attachment_id in enumerate(attachment_ids):
        if attachment_id not in known:
            raise UnknownAttachment(
                f"attachments[{i}]: {attachment_id} was not prepared for run {run.run_id}, "
                "the newest run of this conversation; prepare the attachments again"
            )


async def interrupt(conn: AsyncConnection, run: RunRecord) -> InterruptResult:
    """Records an interrupt of the current turn for the harness; the run keeps its state."""
    if run.state not in LIVE or run.run_type not in CANCELLABLE_TYPES:
        raise RunNotLive(
            f"run_id: only a live run (CLAIMED or INPROGRESS) on the service's own harness can "
            f"be interrupted; this one is {run.state}"
        )
    await conn.execute(
        insert(t.run_messages).values(
            id=ids.new_id("msg"),
            run_id=run.run_id,
            message="",
            routing="interrupt",
            created_at=utcnow(),
        )
    )
    return InterruptResult(run.run_id, run.state, True)


async def prepare_attachments(
    conn: AsyncConnection, run: RunRecord, request: AttachmentsPrepare
) -> PreparedAttachments:
    """Attachment ids for the given run (the conversation's newest, at this moment)."""
    now = utcnow()
    prepared = [PreparedAttachment(ids.new_id("att"), name) for name in request.names()]
    await conn.execute(
        insert(t.attachments),
        [
            {
                "attachment_id": p.attachment_id,
                "conversation_id": run.conversation_id,
                "run_id": run.run_id,
                "file_name": p.name,
                "created_at": now,
            }
            for p in prepared
        ],
    )
    return PreparedAttachments(prepared, run.run_id, run.conversation_id)
