"""A runner finishing the runs it holds: one per call, or several in one (docs/runs-and-tasks.md,
"Runners"). A run is finished exactly once: the caller must hold it, and finishing frees it, so
a second finish of it answers 409 `lease_lost` and changes nothing.

Several runs finish in one transaction with a statement count that does not grow with them: one
SELECT (locking the runs), one INSERT of timeline rows, one UPDATE sent with every run's values
(executemany), plus a transcript's rows for each run that reports one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Row, bindparam, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import InvalidRequest, ServiceError
from gateway.platform.runners.execution import (
    Outcome,
    Runner,
    held_runs,
    lease_lost,
    status_json,
    store_artifact,
)
from gateway.platform.runs import timeline as run_timeline
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_FINISH = 50  # runs per finish call
r = t.runs
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
)
_UPDATE = (
    update(r)
    .where(r.c.run_id == bindparam("w_run_id"), r.c.runner_uid == bindparam("w_holder"))
    .values({name: bindparam(f"w_{name}", type_=r.c[name].type) for name in WRITTEN})
)


@dataclass(frozen=True, slots=True)
class Ending:
    """How a runner says a run it holds ended."""

    run_id: str
    outcome: Outcome
    status_message: str | None = None
    error_code: str | None = None
    transcript: str | None = None


async def finish(
    conn: AsyncConnection, runner: Runner, ending: Ending, transcript_link: Callable[[str], str]
) -> SimpleNamespace:
    """Ends a held run: SUCCEEDED or FAILED (a CLAIMED run passes INPROGRESS first), or
    acknowledges a cancellation (CANCELLED, the run was cancelled meanwhile). The transcript
    is stored and `session_link` points at it (`transcript_link(run_id)`) unless the runner
    set one. The runner holds the run no more. Raises 404, 409 `lease_lost` or 400."""
    (result,) = await finish_runs(conn, runner, [ending], transcript_link)
    if isinstance(result, ServiceError):
        raise result
    return result


async def finish_runs(
    conn: AsyncConnection,
    runner: Runner,
    endings: list[Ending],
    transcript_link: Callable[[str], str],
) -> list[SimpleNamespace | ServiceError]:
    """`finish` for each ending, in order: the run as it is now, or the error finishing it
    alone would have raised (the others finish all the same). A run named twice finishes
    once; the second answers `lease_lost`."""
    held = await held_runs(conn, runner, list(dict.fromkeys(e.run_id for e in endings)))
    now = utcnow()
    events: list[dict[str, Any]] = []
    writes: list[dict[str, Any]] = []
    results: list[SimpleNamespace | ServiceError] = []
    for ending in endings:
        row = held[ending.run_id]
        if isinstance(row, ServiceError):
            results.append(row)
            continue
        try:
            values = _ending(row, ending, runner, now, events)
        except InvalidRequest as exc:
            results.append(exc)
            continue
        held[ending.run_id] = lease_lost(runner, ending.run_id, values.get("state", row.state))
        if ending.transcript is not None:
            await store_artifact(conn, row, _transcript(ending.transcript))
            if row.session_link is None:
                values["session_link"] = transcript_link(ending.run_id)
        written = {name: values.get(name, getattr(row, name)) for name in WRITTEN}
        writes.append(
            {"w_run_id": row.run_id, "w_holder": runner.uid}
            | {f"w_{name}": value for name, value in written.items()}
        )
        results.append(updated_row(row, values))
    await run_timeline.record_entries(conn, events)
    if writes:
        await conn.execute(_UPDATE, writes)
    return results


def _ending(
    row: Row[Any], ending: Ending, runner: Runner, now: datetime, events: list[dict[str, Any]]
) -> dict[str, Any]:
    """The run's new values; its timeline rows appended to `events`. Raises InvalidRequest
    (before appending anything) for an outcome the run's state does not allow."""
    values: dict[str, Any] = {
        "updated_at": now,
        "runner_uid": None,
        "lease_expires_at": None,
        "lease_renewed_at": None,
    }
    if row.state == "CANCELLED":
        # the cancellation stands whatever the runner reports; what it saw is in the transcript
        return values
    if ending.outcome == "CANCELLED":
        raise InvalidRequest(
            f"outcome: CANCELLED acknowledges a cancel; run {row.run_id} was not cancelled "
            f"(it is {row.state})"
        )
    at = now
    if row.state == "CLAIMED" or row.state == "BLOCKED":
        if row.state == "CLAIMED":
            values["started_at"] = row.started_at or now
        events.append(run_timeline.entry(row.run_id, "INPROGRESS", at, runner_uid=runner.uid))
        at += timedelta(microseconds=1)  # the timeline orders by time: it ended after
    values["state"] = ending.outcome
    if ending.outcome == "FAILED":
        values["failed_at"] = at
        values["status_message"] = status_json(
            ending.status_message or "the run failed", ending.error_code or "run_failed"
        )
    elif ending.status_message is not None:
        values["status_message"] = status_json(ending.status_message)
    events.append(
        run_timeline.entry(
            row.run_id, ending.outcome, at, runner_uid=runner.uid, reason=ending.status_message
        )
    )
    return values


def _transcript(text: str) -> dict[str, Any]:
    content = text.encode()
    return {
        "artifact_type": "TRANSCRIPT",
        "filename": "transcript.txt",
        "mime_type": "text/plain; charset=utf-8",
        "size": len(content),
        "content": content,
    }


def updated_row(row: Row[Any], values: dict[str, Any]) -> SimpleNamespace:
    """`row` as it is after an UPDATE of `values` (no read back)."""
    return SimpleNamespace(**{**row._asdict(), **values})
