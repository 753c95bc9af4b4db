"""A runner finishing the runs it holds: one per call, or several in one (docs/runs-and-tasks.md,
"Runners"). A run is finished exactly once: the caller must hold it, and finishing frees it, so
a second finish of it answers 409 `lease_lost` and changes nothing.

Several runs finish in one transaction with a statement count that does not grow with them: one
SELECT (locking the runs), one INSERT of timeline rows, one UPDATE sent with every run's values
(executemany), plus a transcript's rows for each run that reports one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta

from msgspec import structs
from sqlalchemy import bindparam, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import InvalidRequest, ServiceError
from gateway.platform.runners.leases import ended_entry, held_runs, lease_lost
from gateway.platform.runners.models import RunEnding, RunStatus
from gateway.platform.runners.registry import Runner
from gateway.platform.runners.reports import MAX_STATUS, status_of, store_artifact
from gateway.platform.runs.outputs.models import NewArtifact
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import RunRecord, StatusMessage
from gateway.platform.runs.record.states import allows, next_state
from gateway.platform.runs.record.store import json_column

r = t.runs
COMPLETED = frozenset({"SUCCEEDED", "FAILED"})  # a runner did the work (not cancelled, no error)
# told of the runs a finish completed, in its transaction (Services.runs_completed)
RunsCompleted = Callable[[AsyncConnection, Sequence[RunRecord]], Awaitable[None]]
# the columns a finish writes: every run's UPDATE of a batch sets all of them (the ones its
# ending leaves alone to the value read under the lock), so one statement serves them all
WRITTEN = (
    "state",
    "started_at",
    "failed_at",
    "status_message",
    "session_link",
    "updated_at",
    "runner_uid",
    "lease_expires_at",
    "lease_renewed_at",
    "debug_session",
    "debug_runner_uid",
)
_UPDATE = (
    update(r)
    .where(r.c.run_id == bindparam("w_run_id"), r.c.runner_uid == bindparam("w_holder"))
    .values({name: bindparam(f"w_{name}", type_=r.c[name].type) for name in WRITTEN})
)


async def finish(
    conn: AsyncConnection,
    runner: Runner,
    run_id: str,
    ending: RunEnding,
    transcript_link: Callable[[str], str],
    completed: RunsCompleted | None = None,
) -> RunStatus:
    """Ends a held run: SUCCEEDED or FAILED (a CLAIMED or PENDING run passes INPROGRESS first),
    ERROR (the platform failed it: retryable), or acknowledges a cancellation (CANCELLED, the run
    was cancelled meanwhile). The transcript is stored and `session_link` points at it
    (`transcript_link(run_id)`) unless the runner set one. The runner holds the run no more.
    Raises 404, 409 `lease_lost` or 400."""
    (result,) = await finish_runs(conn, runner, [(run_id, ending)], transcript_link, completed)
    if isinstance(result, ServiceError):
        raise result
    return RunStatus.of(result)


async def finish_runs(
    conn: AsyncConnection,
    runner: Runner,
    endings: list[tuple[str, RunEnding]],
    transcript_link: Callable[[str], str],
    completed: RunsCompleted | None = None,
) -> list[RunRecord | ServiceError]:
    """`finish` for each (run id, ending), in order: the run as it is now, or the error
    finishing it alone would have raised (the others finish all the same). A run named twice
    finishes once; the second answers `lease_lost`. `completed` hears of the runs that ended
    SUCCEEDED or FAILED, in the same transaction (the platform's scorers sample them)."""
    held = await held_runs(conn, runner, list(dict.fromkeys(run_id for run_id, _ in endings)))
    now = utcnow()
    events: list[run_timeline.Entry] = []
    results: list[RunRecord | ServiceError] = []
    for run_id, ending in endings:
        run = held[run_id]
        if isinstance(run, ServiceError):
            results.append(run)
            continue
        try:
            ended = _ending(run, ending, runner, now, events)
        except ServiceError as exc:
            results.append(exc)
            continue
        held[run_id] = lease_lost(runner, run_id, ended.state)
        if ending.transcript is not None:
            await store_artifact(conn, run, _transcript(ending.transcript))
            if run.session_link is None:
                ended = structs.replace(ended, session_link=transcript_link(run_id))
        results.append(ended)
    await run_timeline.record_entries(conn, events)
    # one UPDATE binds every written column of each run (the JSON one as the store takes it)
    writes = [
        {"w_run_id": ended.run_id, "w_holder": runner.uid}
        | {f"w_{name}": getattr(ended, name) for name in WRITTEN}
        | {"w_status_message": json_column(ended.status_message)}
        for ended in results
        if isinstance(ended, RunRecord)
    ]
    if writes:
        await conn.execute(_UPDATE, writes)
    if completed is not None:
        done = [r for r in results if isinstance(r, RunRecord) and r.state in COMPLETED]
        if done:
            await completed(conn, done)
    return results


def _ending(
    run: RunRecord,
    ending: RunEnding,
    runner: Runner,
    now: datetime,
    events: list[run_timeline.Entry],
) -> RunRecord:
    """The run as the ending leaves it; its timeline rows appended to `events`. Raises a
    ServiceError (before appending anything) for an outcome the run's state does not allow."""
    freed = structs.replace(
        run, updated_at=now, runner_uid=None, lease_expires_at=None, lease_renewed_at=None
    )
    if run.debug_session == "open":  # the session ends; the run stays as its failure left it
        reason = f"{ending.outcome}: {ending.status_message}" if ending.status_message else None
        events.append(ended_entry(run.run_id, runner.uid, now, reason or ending.outcome))
        return structs.replace(freed, debug_session=None, debug_runner_uid=None)
    if run.state == "CANCELLED":
        # the cancellation stands whatever the runner reports; what it saw is in the transcript
        return freed
    if ending.outcome == "CANCELLED":
        raise InvalidRequest(
            f"outcome: CANCELLED acknowledges a cancel; run {run.run_id} was not cancelled "
            f"(it is {run.state})"
        )
    at = now
    if ending.outcome == "ERROR":  # the platform failed it, wherever the run was
        failed = next_state(run.state, "error")
        events.append(
            run_timeline.entry(
                run.run_id, failed, at, runner_uid=runner.uid, reason=ending.status_message
            )
        )
        message = (ending.status_message or "the platform failed the run")[:MAX_STATUS]
        status = StatusMessage(message, ending.error_code or "platform_error", True)
        return structs.replace(freed, state=failed, status_message=status)
    state = run.state
    if allows(state, "start"):  # CLAIMED, PENDING or BLOCKED: it ran, then ended
        state = next_state(state, "start")
        if run.state != "BLOCKED":
            freed = structs.replace(freed, started_at=run.started_at or now)
        events.append(run_timeline.entry(run.run_id, state, at, runner_uid=runner.uid))
        at += timedelta(microseconds=1)  # the timeline orders by time: it ended after
    ended = next_state(state, "succeed" if ending.outcome == "SUCCEEDED" else "fail")
    events.append(
        run_timeline.entry(
            run.run_id, ended, at, runner_uid=runner.uid, reason=ending.status_message
        )
    )
    if ended == "FAILED":
        status = status_of(
            ending.status_message or "the run failed", ending.error_code or "run_failed"
        )
        return structs.replace(freed, state=ended, failed_at=at, status_message=status)
    if ending.status_message is not None:
        freed = structs.replace(freed, status_message=status_of(ending.status_message))
    return structs.replace(freed, state=ended)


def _transcript(text: str) -> NewArtifact:
    content = text.encode()
    return NewArtifact(
        artifact_type="TRANSCRIPT",
        filename="transcript.txt",
        mime_type="text/plain; charset=utf-8",
        size=len(content),
        content=content,
    )
