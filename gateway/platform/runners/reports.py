"""What a runner reports of a run it holds: progress (its state on the way, what it is doing,
its session), the conversation messages the run produced, and the artifacts it made."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

import msgspec
from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import InvalidRequest
from gateway.platform.analytics import pull_requests
from gateway.platform.runners.leases import held_run
from gateway.platform.runners.models import ArtifactAdded, ReportedMessage, RunStatus
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.outputs.artifacts import insert_artifact
from gateway.platform.runs.outputs.models import NewArtifact
from gateway.platform.runs.record import timeline as run_timeline
from gateway.platform.runs.record.models import RunRecord, StatusMessage
from gateway.platform.runs.record.states import TERMINAL, Event, allows, next_state
from gateway.platform.runs.record.store import find_run, json_column, load_run
from gateway.platform.tasks import tasks

MAX_STATUS = 500  # characters of a status message
r = t.runs
# the state a runner's progress names -> the transition it asks for
PROGRESS: dict[str, Event] = {"PENDING": "accept", "INPROGRESS": "start", "BLOCKED": "block"}


async def progress(
    conn: AsyncConnection,
    runner: Runner,
    run_id: str,
    *,
    state: Literal["PENDING", "INPROGRESS", "BLOCKED"] | None,
    status_message: str | None,
    session_id: str | None,
    session_link: str | None,
) -> RunStatus:
    """Moves a held run along (CLAIMED -> PENDING, CLAIMED, PENDING or BLOCKED -> INPROGRESS,
    INPROGRESS -> BLOCKED: runs/record/states.py) and records what it is doing; a cancelled run
    keeps its state."""
    run = await held_run(conn, runner, run_id)
    now = utcnow()
    ended = run.state in TERMINAL
    target: str | None = None
    if not ended and state is not None and state != run.state:
        if not allows(run.state, PROGRESS[state]):
            raise InvalidRequest(f"state: a {run.state} run cannot become {state}")
        target = next_state(run.state, PROGRESS[state])
    starts = target == "INPROGRESS" and run.started_at is None
    status = None if ended or status_message is None else status_of(status_message)
    await conn.execute(
        update(r)
        .where(r.c.run_id == run_id)
        .values(  # a column set to itself keeps its value
            updated_at=now,
            state=r.c.state if target is None else target,
            started_at=now if starts else r.c.started_at,
            status_message=r.c.status_message if status is None else json_column(status),
            session_id=r.c.session_id if session_id is None else session_id,
            session_link=r.c.session_link if session_link is None else session_link,
        )
    )
    if target is not None:  # after the update: the inbox reads the new status message
        await run_timeline.record(conn, [run_id], target, now, runner_uid=runner.uid)
    return RunStatus.of(await load_run(conn, run_id))


def status_of(message: str, error_code: str | None = None) -> StatusMessage:
    return StatusMessage(message[:MAX_STATUS], error_code, False)


async def append_messages(
    conn: AsyncConnection, runner: Runner, run_id: str, messages: list[ReportedMessage]
) -> int:
    """Conversation messages the run produced (what was said, or an action taken), in order."""
    await held_run(conn, runner, run_id)
    for i, message in enumerate(messages):
        skill = None if message.action is None else message.action.input
        if skill is not None and skill.skill_path is None and skill.bundled_skill_id is None:
            raise InvalidRequest(
                f"messages[{i}].action.input: give skill_path, bundled_skill_id or both"
            )
    now = utcnow()
    await conn.execute(
        insert(t.run_messages),
        [
            {
                "id": ids.new_id("msg"),
                "run_id": run_id,
                "message": message.text,
                "mode": message.role,
                "routing": "agent",
                "action": None if message.action is None else msgspec.to_builtins(message.action),
                # a microsecond apart: the messages of one report keep their order when read
                "created_at": now + timedelta(microseconds=i),
            }
            for i, message in enumerate(messages)
        ],
    )
    return len(messages)


async def add_artifact(
    conn: AsyncConnection, runner: Runner, run_id: str, artifact: NewArtifact
) -> ArtifactAdded:
    """A FILE (content stored) or PULL_REQUEST artifact of a held run; it joins the run's
    `artifacts` and, for a factory task's run, the task's outputs."""
    run = await held_run(conn, runner, run_id)
    uid = await store_artifact(conn, run, artifact)
    return ArtifactAdded(uid, artifact.artifact_type)


async def store_artifact(conn: AsyncConnection, run: RunRecord, artifact: NewArtifact) -> str:
    """Stores the artifact (runs/outputs); a pull request is recorded for factory metrics, and
    a file or pull request joins the outputs of the run's task. Returns its uid."""
    now = utcnow()
    uid = await insert_artifact(conn, run, artifact, now)
    kind = artifact.artifact_type
    if kind == "PULL_REQUEST":
        await pull_requests.record(
            conn,
            run,
            uid,
            now,
            url=artifact.url,
            title=artifact.title,
            branch=artifact.branch,
            state=artifact.pr_state,
        )
    if kind != "TRANSCRIPT":
        task = await tasks.live_task_of(conn, await _root_conversation(conn, run))
        if task is not None:
            url = artifact.url if kind == "PULL_REQUEST" else f"artifact:{uid}"
            title = artifact.title or artifact.filename
            await tasks.add_output(conn, task.uid, kind.lower(), title, url)
    return uid


async def _root_conversation(conn: AsyncConnection, run: RunRecord) -> str:
    """A task is bound to its root run's conversation (tasks.task_by_run)."""
    root = run if run.parent_run_id is None else await find_run(conn, run.root_run_id)
    return (root or run).conversation_id
