"""Follow-ups, interrupts and prepared attachments, addressed by run or by conversation.

A conversation is served by its newest top-level run. Follow-ups are routed by the run's state:
QUEUED/PENDING -> "queued" (ahead of the start), CLAIMED/INPROGRESS/BLOCKED -> "injected" into the
live session (a BLOCKED run resumes INPROGRESS), ended -> "resumed" (a new execution: the run is
QUEUED again), except a FAILED environment-setup run inside its debug window -> "debug" (stays
FAILED, status message unchanged). The window runs from the failure (`failed_at`), so debug
follow-ups do not extend it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.log import NewEvent, record_events
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Prepared, Values
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import AttachmentNotUploaded, RunNotLive, UnknownAttachment
from gateway.platform.runs.conversations.debug_requests import request_session
from gateway.platform.runs.conversations.models import (
    FollowUp,
    FollowUpResult,
    InterruptResult,
    Routing,
)
from gateway.platform.runs.record import run_events
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import CANCELLABLE_TYPES, SETUP_FAILURE, RunRecord
from gateway.platform.runs.record.states import LIVE, RunState, allows, next_state
from gateway.platform.runs.record.store import lock_run, lock_runs

DEBUG_WINDOW = timedelta(hours=1)
r = t.runs
# the run messages of many follow-ups (`_Unchanged`: hundreds in an evaluator's batch), encoded
# once per column type (`_message_row`'s columns; the others stay NULL)
MESSAGES = BulkInsert(
    t.run_messages, ("id", "run_id", "message", "attachments", "mode", "routing", "created_at")
)


def _routing(run: RunRecord, debug: bool = True) -> tuple[Routing, RunState]:
    """(routing, next state) of a follow-up to this run (`debug`: False for follow-ups that
    are no person's answer to a failed setup, which resume the run instead)."""
    if run.state in ("QUEUED", "PENDING"):
        return "queued", run.state
    if run.state in LIVE:
        return "injected", run.state
    if allows(run.state, "unblock"):  # the input it waited for
        return "injected", next_state(run.state, "unblock")
    if not debug:
        return "resumed", next_state(run.state, "resume")
    if run.state == "FAILED" and run.debug_session == "open":
        return "debug", "FAILED"  # an open debug session goes on until its runner ends it
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
    return "resumed", next_state(run.state, "resume")


async def follow_up(
    conn: AsyncConnection, run: RunRecord, request: FollowUp, lease_s: float
) -> FollowUpResult:
    """Routes the follow-up by the run's state; a debug follow-up goes to a debug session of
    the runner that failed the run (409 `debug_session_unavailable` when none can be opened;
    `lease_s` tells whether that runner is online)."""
    run = await lock_run(conn, run.run_id)
    attachments = request.attachments or []
    await _check_attachments(conn, run, attachments)
    routing, state = _routing(run)
    if routing == "debug":
        await request_session(conn, run, lease_s)
    return await _deliver(conn, run, request.message, attachments, request.mode, routing, state)


class ProviderFollowUp(NamedTuple):
    run_id: str
    message: str
    attachments: list[str]
    at: datetime | None = None  # when it came (its message's time); None: now


async def provider_follow_ups(
    conn: AsyncConnection, follow_ups: Sequence[ProviderFollowUp]
) -> list[FollowUpResult]:
    """Follow-ups provider events send to their work items' runs (runs of work items,
    docs/providers.md#work-items), in order: each routed like a person's, but an ended run
    always resumes (no debug session), and its attachments are the platform's own (already
    stored). Each is routed by the state the one before left its run in. Those that leave the
    state as it was (a queued or live run's: nearly all) are written together, a few statements
    whatever their number (an evaluator's batch may hold hundreds for one run); one that
    changes it is written alone, after the ones before it, so what hears of the change sees
    what it would one by one."""
    # every run locked up front, in one order (a statement, not one per run); one whose state a
    # follow-up changed is read again, alone, by the next of its follow-ups
    runs = await lock_runs(conn, {follow_up.run_id for follow_up in follow_ups})
    unchanged = _Unchanged(conn.dialect)
    results: list[FollowUpResult] = []
    for follow_up in follow_ups:
        run = runs.get(follow_up.run_id)
        if run is None:  # changed by the one before, or gone (NotFound, as before)
            run = runs[follow_up.run_id] = await lock_run(conn, follow_up.run_id)
        routing, state = _routing(run, debug=False)
        if state == run.state:
            unchanged.add(run, follow_up, routing, follow_up.at or utcnow())
            results.append(FollowUpResult(run.run_id, state, routing))
            continue
        await unchanged.write(conn)
        attachments = follow_up.attachments
        results.append(
            await _deliver(
                conn, run, follow_up.message, attachments, None, routing, state, follow_up.at
            )
        )
        del runs[follow_up.run_id]  # read again (and locked: its lock is held) when needed
    await unchanged.write(conn)
    return results


class _Unchanged:
    """Follow-ups that leave their runs' states as they were, not written yet: what `_deliver`
    writes for each (a message, the run's updated_at, an event), in one statement per table.
    The messages' rows are built as the driver takes them (MESSAGES' columns, as
    `_message_row`'s), each follow-up's time encoded once."""

    def __init__(self, dialect: Dialect) -> None:
        self.messages: list[Values] = []
        self.updated: dict[str, datetime] = {}  # run id -> its last follow-up's time
        self.events: list[NewEvent] = []
        self.ids = ids.IdSupply()
        self._time = MESSAGES.encoder(dialect, "created_at")
        self._json = MESSAGES.encoder(dialect, "attachments")

    def add(
        self, run: RunRecord, follow_up: ProviderFollowUp, routing: Routing, now: datetime
    ) -> None:
        attachments = self._json(follow_up.attachments or None)
        self.messages.append(
            (
                *(self.ids.id("msg"), run.run_id, follow_up.message, attachments),
                *(None, routing, self._time(now)),  # no mode: a queued or live run's
            )
        )
        self.updated[run.run_id] = now
        self.events.append(run_events.followup_event(run, run.state, follow_up.message, now))

    async def write(self, conn: AsyncConnection) -> None:
        if not self.messages:
            return
        await MESSAGES.insert(conn, Prepared("id", [], self.messages))
        await conn.execute(
            update(r).where(r.c.run_id == bindparam("run")).values(updated_at=bindparam("at")),
            [{"run": run_id, "at": at} for run_id, at in self.updated.items()],
        )
        await record_events(conn, self.events)
        self.messages, self.updated, self.events = [], {}, []


async def _deliver(
    conn: AsyncConnection,
    run: RunRecord,
    message: str,
    attachments: list[str],
    mode: str | None,
    routing: Routing,
    state: RunState,
    now: datetime | None = None,
) -> FollowUpResult:
    """`now`: when the follow-up came (a provider's, in its batch's order); None: now."""
    now = now or utcnow()
    # a message injected into a live session runs in that session's mode
    mode = None if routing in ("injected", "debug") else mode
    await conn.execute(
        insert(t.run_messages).values(
            _message_row(run.run_id, message, attachments, mode, routing, now)
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
            # a debug session requested and never opened is moot once the run runs again
            debug_session=None if resumed else r.c.debug_session,
            debug_runner_uid=None if resumed else r.c.debug_runner_uid,
        )
    )
    if state != run.state:  # BLOCKED -> INPROGRESS, or ended -> QUEUED: a change of state
        await run_timeline.record(conn, [run.run_id], state, now, reason=f"follow-up ({routing})")
    await run_events.on_followup(conn, run, state, message, now)
    return FollowUpResult(run.run_id, state, routing)


def _message_row(
    run_id: str,
    message: str,
    attachments: list[str],
    mode: str | None,
    routing: Routing,
    now: datetime,
) -> dict[str, Any]:
    """A follow-up's row in run_messages (`_Unchanged.add` builds the same row as a tuple)."""
    return {
        "id": ids.new_id("msg"),
        "run_id": run_id,
        "message": message,
        "attachments": attachments or None,
        "mode": mode,
        "routing": routing,
        "created_at": now,
    }


async def _check_attachments(
    conn: AsyncConnection, run: RunRecord, attachment_ids: list[str]
) -> None:
    if not attachment_ids:
        return
    a = t.attachments
    query = select(a.c.attachment_id, a.c.uploaded_at).where(
        a.c.attachment_id.in_(attachment_ids), a.c.run_id == run.run_id
    )
    known = {row.attachment_id: row.uploaded_at for row in await conn.execute(query)}
    for i, attachment_id in enumerate(attachment_ids):
        if attachment_id not in known:
            raise UnknownAttachment(
                f"attachments[{i}]: {attachment_id} was not prepared for run {run.run_id}, "
                "the newest run of this conversation; prepare the attachments again"
            )
        if known[attachment_id] is None:  # a file that never reaches the agent: refuse it
            raise AttachmentNotUploaded(
                f"attachments[{i}]: {attachment_id} has no content yet; PUT it to the upload "
                "URL prepare answered, then send the follow-up"
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
