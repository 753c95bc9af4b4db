"""The runner protocol (agent API keys): register, claim runs with a lease, heartbeat, report
progress, messages, artifacts and usage, finish or give back (docs/runs-and-tasks.md)."""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.identities import Principal
from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.errors import InvalidRequest, NotFound, ServiceError
from gateway.metrics.counts import COUNTS
from gateway.platform.runners import execution as run_execution
from gateway.platform.runners import finish as run_finish

Uid = Annotated[str, Meta(min_length=1, max_length=64)]
Text = Annotated[str, Meta(max_length=100_000)]
MAX_WAIT_S = 30.0
MAX_FILE_BYTES = 512 * 1024  # decoded; the 1 MB API body cap holds its base64 and the rest


class RunnerRegister(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=200)]
    host: Annotated[str, Meta(max_length=200)] | None = None
    factory_uid: Annotated[Uid | None, Meta(description="claim only this factory's runs")] = None
    concurrency: Annotated[int, Meta(ge=1, le=1000)] = 1
    version: Annotated[str, Meta(max_length=64)] | None = None


class RunnerRegistered(Struct):
    runner_uid: str
    team_uid: str
    lease_s: Annotated[float, Meta(description="renew a claimed run's lease within this")]


class ClaimRequest(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    max_runs: Annotated[int, Meta(ge=1, le=run_execution.MAX_CLAIM)] = 1
    wait_s: Annotated[
        float, Meta(ge=0, le=MAX_WAIT_S, description="long-poll: wait this long for a run")
    ] = 20.0


class RunMessage(Struct, kw_only=True):
    id: str
    message: str
    attachments: Annotated[list[str], Meta(description="attachment ids prepared for the run")]
    mode: str | None
    routing: Annotated[
        str,
        Meta(
            description="queued (sent before the run started), resumed (it started this "
            "execution of an ended run), injected (sent into the live session)"
        ),
    ]
    created_at: Timestamp


class ClaimedRun(Struct, kw_only=True):
    run_id: str
    title: str | None
    prompt: str
    state: str
    attempt: Annotated[int, Meta(description="1 for the first claim of the run")]
    lease_expires_at: Timestamp
    conversation_id: str
    factory_uid: str | None
    source: str
    metadata: dict[str, str] | None
    agent_config: dict[str, Any] | None
    event_payload: Annotated[
        bool, Meta(description="a webhook run: its event-payload.json can be fetched")
    ]
    mode: Annotated[
        str,
        Meta(
            description="this execution's mode: the newest queued or resuming follow-up's, "
            "else the run's own (a scheduled agent's), else normal"
        ),
    ]
    messages: Annotated[
        list[RunMessage], Meta(description="the follow-ups users sent to the run, oldest first")
    ]


class Claimed(Struct):
    runs: Annotated[list[ClaimedRun], Meta(description="empty when none came within wait_s")]


class Held(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid


class HeartbeatResult(Struct, kw_only=True):
    run_id: str
    state: str
    lease_expires_at: Timestamp
    cancel_requested: Annotated[bool, Meta(description="stop the run, then finish CANCELLED")]
    interrupt_requested: Annotated[bool, Meta(description="interrupt the current turn")]
    messages: Annotated[
        list[RunMessage],
        Meta(description="follow-ups sent into the live session since the last heartbeat"),
    ]


class Progress(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    state: Literal["INPROGRESS", "BLOCKED"] | None = None
    status_message: Annotated[str, Meta(max_length=10_000)] | None = None
    session_id: Annotated[str, Meta(max_length=64)] | None = None
    session_link: Annotated[str, Meta(max_length=500, pattern=r"^https?://")] | None = None


class RunState(Struct, kw_only=True):
    run_id: str
    state: str
    status_message: dict[str, Any] | None
    session_link: str | None


class Message(Struct, forbid_unknown_fields=True):
    role: Literal["agent", "user", "tool", "system"]
    text: Text


class Messages(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    messages: Annotated[list[Message], Meta(min_length=1, max_length=100)]


class Appended(Struct):
    appended: int


class ArtifactUpload(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    artifact_type: Literal["FILE", "PULL_REQUEST"]
    # FILE
    filename: Annotated[str, Meta(min_length=1, max_length=300)] | None = None
    filepath: Annotated[str, Meta(max_length=1000)] | None = None
    mime_type: Annotated[str, Meta(min_length=1, max_length=100)] = "application/octet-stream"
    content_base64: Annotated[str, Meta(description="FILE: at most 512 KiB decoded")] | None = None
    description: Annotated[str, Meta(max_length=2000)] | None = None
    title: Annotated[str, Meta(max_length=500)] | None = None
    # PULL_REQUEST
    url: Annotated[str, Meta(max_length=2000, pattern=r"^https?://")] | None = None
    branch: Annotated[str, Meta(max_length=300)] | None = None
    state: Literal["open", "closed", "merged"] | None = None

    def stored(self) -> dict[str, Any]:
        if self.artifact_type == "PULL_REQUEST":
            if self.url is None:
                raise InvalidRequest("url: required for a PULL_REQUEST artifact")
            return {
                "artifact_type": "PULL_REQUEST",
                "url": self.url,
                "branch": self.branch,
                "title": self.title,
                "pr_state": self.state,
                "description": self.description,
            }
        if self.filename is None or self.content_base64 is None:
            field = "filename" if self.filename is None else "content_base64"
            raise InvalidRequest(f"{field}: required for a FILE artifact")
        try:
            content = base64.b64decode(self.content_base64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest("content_base64: not valid base64") from exc
        if len(content) > MAX_FILE_BYTES:
            raise InvalidRequest(f"content_base64: more than {MAX_FILE_BYTES} bytes decoded")
        return {
            "artifact_type": "FILE",
            "filename": self.filename,
            "filepath": self.filepath,
            "mime_type": self.mime_type,
            "size": len(content),
            "content": content,
            "description": self.description,
            "title": self.title,
        }


class ArtifactAdded(Struct):
    artifact_uid: str
    artifact_type: str


class Usage(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    model_id: Annotated[str, Meta(max_length=200)] | None = None
    input_tokens: Annotated[int, Meta(ge=0, le=10**12)] = 0
    output_tokens: Annotated[int, Meta(ge=0, le=10**12)] = 0
    cost_usd: Annotated[
        dict[Annotated[str, Meta(min_length=1, max_length=64)], Annotated[float, Meta(ge=0)]],
        Meta(description='dollars per cost component, e.g. {"llm": 0.42, "compute": 0.03}'),
    ] = {}


class Reported(Struct):
    run_id: str
    reported: bool


class RunEnding(Struct, kw_only=True, forbid_unknown_fields=True):
    """How a run ended, as a runner reports it: one finish or one item of a batch finish."""

    outcome: Literal["SUCCEEDED", "FAILED", "CANCELLED"]
    status_message: Annotated[str, Meta(max_length=10_000)] | None = None
    error_code: Annotated[str, Meta(max_length=64, pattern=r"^[a-z0-9_]+$")] | None = None
    transcript: (
        Annotated[str, Meta(max_length=900_000, description="stdout and stderr, as text")] | None
    ) = None


class Finish(RunEnding, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid


class FinishItem(RunEnding, kw_only=True, forbid_unknown_fields=True):
    run_id: Uid


class FinishMany(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    runs: Annotated[
        list[FinishItem],
        Meta(max_length=run_finish.MAX_FINISH, description="the runs to finish, in order"),
    ] = []
    claim: Annotated[
        int, Meta(ge=0, le=run_execution.MAX_CLAIM, description="then claim up to this many")
    ] = 0
    wait_s: Annotated[
        float, Meta(ge=0, le=MAX_WAIT_S, description="long-poll for the claim, as /runner/claim")
    ] = 0.0


class ItemProblem(Struct, kw_only=True):
    status: int
    code: str
    detail: str


class FinishedRun(Struct, kw_only=True):
    run_id: str
    ok: Annotated[bool, Meta(description="false: not finished, `problem` says why")]
    state: str | None = None
    status_message: dict[str, Any] | None = None
    session_link: str | None = None
    problem: ItemProblem | None = None


class FinishedMany(Struct):
    finished: Annotated[list[FinishedRun], Meta(description="one per run asked, in order")]
    runs: Annotated[list[ClaimedRun], Meta(description="the runs claimed (claim > 0)")]


class Release(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    reason: Annotated[str, Meta(max_length=500)] = "given back by its runner"


@asynccontextmanager
async def as_runner(
    request: Request, principal: Principal, runner_uid: str
) -> AsyncIterator[tuple[AsyncConnection, run_execution.Runner]]:
    """A transaction on behalf of the caller's runner (404 for anyone else's)."""
    services = services_of(request)
    async with services.database.transaction() as conn:
        runner = await run_execution.runner_of(conn, principal, runner_uid, services.runners_seen)
        yield conn, runner


routes = Routes("runners")
BASE = "/runner"
RUN = f"{BASE}/runs/{{run_id}}"
AGENT_ONLY = (403, "`forbidden`: not an agent API key")
LOST = (409, "`lease_lost`: this runner does not hold the run (finished, expired, re-claimed)")
HELD_ERRORS = (400, 401, 403, 404, 409, 413)


@routes.post(
    f"{BASE}/register",
    "Register a runner",
    ok=201,
    response=RunnerRegistered,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Once per runner process; the runner_uid goes into every later call.",
)
async def register_endpoint(request: Request, body: Body[RunnerRegister]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        runner = await run_execution.register(
            conn,
            principal,
            name=spec.name,
            host=spec.host,
            factory_uid=spec.factory_uid,
            concurrency=spec.concurrency,
            version=spec.version,
        )
    registered = {
        "runner_uid": runner.uid,
        "team_uid": runner.team_uid,
        "lease_s": services.settings.run_lease_s,
    }
    return json_response(registered, 201)


@routes.post(
    f"{BASE}/claim",
    "Claim queued runs (long-poll)",
    response=Claimed,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Waits up to wait_s for a QUEUED run of the runner's team (and factory); each run "
    "comes CLAIMED with a lease the runner renews by heartbeat.",
)
async def claim_endpoint(request: Request, body: Body[ClaimRequest]) -> Response:
    principal = await principal_of(request)
    ask = await body.read()
    runs = await _claim_within(request, principal, ask.runner_uid, ask.max_runs, ask.wait_s)
    return json_response({"runs": runs})


async def _claim_within(
    request: Request, principal: Principal, runner_uid: str, max_runs: int, wait_s: float
) -> list[dict[str, Any]]:
    """Up to `max_runs` runs claimed for the runner, waiting up to `wait_s` for the first."""
    deadline = time.monotonic() + wait_s
    queued = services_of(request).runs_queued
    pause = 0.05
    while True:
        ticket = queued.ticket()  # before looking: a run queued meanwhile wakes the wait below
        async with as_runner(request, principal, runner_uid) as (conn, runner):
            claimed = await _claim(request, conn, runner, max_runs)
        left = deadline - time.monotonic()
        if claimed or left <= 0:
            COUNTS.runner_claims["claimed" if claimed else "empty"] += len(claimed) or 1
            return claimed
        # no connection is held while waiting; runs queued by this process wake the wait at
        # once, others' are looked for a few times a second; a runner that went away stops
        # the wait (a shutdown does not wait for it)
        if not await queued.wait(ticket, min(pause, left)):
            pause = min(pause * 2, 0.5)
        if await request.is_disconnected():
            COUNTS.runner_claims["empty"] += 1
            return []


async def _claim(
    request: Request, conn: AsyncConnection, runner: run_execution.Runner, max_runs: int
) -> list[dict[str, Any]]:
    lease_s = services_of(request).settings.run_lease_s
    rows = await run_execution.claim(conn, runner, lease_s, max_runs)
    payloads = await run_execution.with_event_payload(conn, rows)
    messages = await run_execution.follow_ups(conn, [row.run_id for row in rows])
    return [_claimed(row, row.run_id in payloads, messages.get(row.run_id, [])) for row in rows]


def _claimed(row: Any, payload: bool, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "title": row.title,
        "prompt": row.prompt,
        "state": row.state,
        "attempt": row.attempts,
        "lease_expires_at": row.lease_expires_at,
        "conversation_id": row.conversation_id,
        "factory_uid": row.factory_uid,
        "source": row.source,
        "metadata": row.metadata,
        "agent_config": row.agent_config,
        "event_payload": payload,
        "mode": run_execution.execution_mode(row, messages),
        "messages": messages,
    }


@routes.post(
    f"{RUN}/heartbeat",
    "Renew a claimed run's lease",
    response=HeartbeatResult,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="Tells the runner whether the run was cancelled or interrupted since its last call.",
)
async def heartbeat_endpoint(request: Request, body: Body[Held]) -> Response:
    principal = await principal_of(request)
    held = await body.read()
    lease_s = services_of(request).settings.run_lease_s
    async with as_runner(request, principal, held.runner_uid) as (conn, runner):
        result = await run_execution.heartbeat(conn, runner, request.path_params["run_id"], lease_s)
    return json_response(result)


@routes.post(
    f"{RUN}/progress",
    "Report a run's progress",
    response=RunState,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="state INPROGRESS starts a CLAIMED (or unblocks a BLOCKED) run; status_message says "
    "what it does now; session_link points at its live session.",
)
async def progress_endpoint(request: Request, body: Body[Progress]) -> Response:
    principal = await principal_of(request)
    report = await body.read()
    async with as_runner(request, principal, report.runner_uid) as (conn, runner):
        row = await run_execution.progress(
            conn,
            runner,
            request.path_params["run_id"],
            state=report.state,
            status_message=report.status_message,
            session_id=report.session_id,
            session_link=report.session_link,
        )
    return json_response(_state(row))


def _state(row: Any) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "state": row.state,
        "status_message": row.status_message,
        "session_link": row.session_link,
    }


@routes.post(
    f"{RUN}/messages",
    "Append conversation messages",
    response=Appended,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
)
async def messages_endpoint(request: Request, body: Body[Messages]) -> Response:
    principal = await principal_of(request)
    batch = await body.read()
    async with as_runner(request, principal, batch.runner_uid) as (conn, runner):
        count = await run_execution.append_messages(
            conn,
            runner,
            request.path_params["run_id"],
            [(m.role, m.text) for m in batch.messages],
        )
    return json_response({"appended": count})


@routes.post(
    f"{RUN}/artifacts",
    "Attach an artifact (a file, or a pull request)",
    ok=201,
    response=ArtifactAdded,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="A factory task's run also adds the artifact to the task's outputs.",
)
async def artifact_endpoint(request: Request, body: Body[ArtifactUpload]) -> Response:
    principal = await principal_of(request)
    upload = await body.read()
    stored = upload.stored()
    async with as_runner(request, principal, upload.runner_uid) as (conn, runner):
        row = await run_execution.add_artifact(conn, runner, request.path_params["run_id"], stored)
    return json_response(
        {"artifact_uid": row.artifact_uid, "artifact_type": row.artifact_type}, 201
    )


@routes.post(
    f"{RUN}/usage",
    "Report usage (tokens, dollars per component)",
    response=Reported,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="Each report adds to the run's usage.",
)
async def usage_endpoint(request: Request, body: Body[Usage]) -> Response:
    principal = await principal_of(request)
    usage = await body.read()
    run_id = request.path_params["run_id"]
    async with as_runner(request, principal, usage.runner_uid) as (conn, runner):
        await run_execution.report_usage(
            conn,
            runner,
            run_id,
            model_id=usage.model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            costs=dict(usage.cost_usd),
        )
    return json_response({"run_id": run_id, "reported": True})


@routes.post(
    f"{RUN}/finish",
    "Finish a run",
    response=RunState,
    errors=HELD_ERRORS,
    problems=(
        AGENT_ONLY,
        LOST,
        (400, "`invalid_request`: CANCELLED for a run that was not cancelled; or a bad field"),
    ),
    notes="SUCCEEDED or FAILED; CANCELLED acknowledges a cancel the heartbeat reported. The "
    "transcript becomes the run's session_link. A second finish answers 409 `lease_lost`.",
)
async def finish_endpoint(request: Request, body: Body[Finish]) -> Response:
    principal = await principal_of(request)
    done = await body.read()
    ending = run_finish.Ending(
        run_id=request.path_params["run_id"],
        outcome=done.outcome,
        status_message=done.status_message,
        error_code=done.error_code,
        transcript=done.transcript,
    )
    async with as_runner(request, principal, done.runner_uid) as (conn, runner):
        row = await run_finish.finish(conn, runner, ending, _transcript_link(request))
    return json_response(_state(row))


def _transcript_link(request: Request) -> Callable[[str], str]:
    base = f"{str(request.base_url).rstrip('/')}/api/v1/agent/runs"
    return lambda run_id: f"{base}/{run_id}/transcript"


@routes.post(
    f"{BASE}/finish",
    "Finish several runs, and claim the next ones",
    response=FinishedMany,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Each run as by /runner/runs/{run_id}/finish, all in one transaction; a run that "
    "cannot be finished (lease_lost, not_found, invalid_request) gets its problem in `finished` "
    "and the others finish all the same. Then, with claim > 0, claims up to that many runs as "
    "/runner/claim does (waiting up to wait_s when none is queued).",
)
async def finish_many_endpoint(request: Request, body: Body[FinishMany]) -> Response:
    principal = await principal_of(request)
    batch = await body.read()
    endings = [
        run_finish.Ending(
            run_id=item.run_id,
            outcome=item.outcome,
            status_message=item.status_message,
            error_code=item.error_code,
            transcript=item.transcript,
        )
        for item in batch.runs
    ]
    async with as_runner(request, principal, batch.runner_uid) as (conn, runner):
        results = await run_finish.finish_runs(conn, runner, endings, _transcript_link(request))
        claimed = await _claim(request, conn, runner, batch.claim) if batch.claim else []
    if batch.claim and not claimed and batch.wait_s > 0:
        # the finishes are committed; now the long-poll, as /runner/claim
        claimed = await _claim_within(
            request, principal, batch.runner_uid, batch.claim, batch.wait_s
        )
    pairs = zip(endings, results, strict=True)
    finished = [_finished(ending.run_id, result) for ending, result in pairs]
    return json_response({"finished": finished, "runs": claimed})


def _finished(run_id: str, result: Any) -> dict[str, Any]:
    if isinstance(result, ServiceError):
        problem = {"status": result.status, "code": result.code, "detail": result.detail}
        return {"run_id": run_id, "ok": False, "problem": problem}
    return {"run_id": run_id, "ok": True, **_state(result)}


@routes.post(
    f"{RUN}/release",
    "Give a run back to the queue",
    response=RunState,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="For a runner that stops before a run ends: QUEUED again (the claim counts as an "
    "attempt).",
)
async def release_endpoint(request: Request, body: Body[Release]) -> Response:
    principal = await principal_of(request)
    given = await body.read()
    async with as_runner(request, principal, given.runner_uid) as (conn, runner):
        row = await run_execution.release(conn, runner, request.path_params["run_id"], given.reason)
    services_of(request).runs_queued.notify()
    return json_response(_state(row))


@routes.post(
    f"{RUN}/event-payload",
    "The webhook payload that started the run",
    response=Any,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST, (404, "`not_found`: not a webhook run, or no such run")),
    notes="The delivery's JSON body as received (event-payload.json).",
)
async def event_payload_endpoint(request: Request, body: Body[Held]) -> Response:
    principal = await principal_of(request)
    held = await body.read()
    run_id = request.path_params["run_id"]
    async with as_runner(request, principal, held.runner_uid) as (conn, runner):
        row = await run_execution.held_run(conn, runner, run_id)
        payload = await run_execution.event_payload(conn, row)
    if payload is None:
        raise NotFound(f"run_id: {run_id} was not started by a webhook delivery")
    return Response(payload, media_type="application/json")
