"""The runner protocol (agent API keys): register, claim runs with a lease, heartbeat, report
progress, messages, artifacts and usage, finish or give back (docs/runs-and-tasks.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.identities import Principal
from gateway.api.auth import principal_of, services_of
from gateway.api.routing import Body, Routes
from gateway.errors import NotFound
from gateway.metrics.counts import COUNTS
from gateway.platform.runners import execution as run_execution
from gateway.platform.runners import finish as run_finish
from gateway.platform.runners.models import (
    Appended,
    ArtifactAdded,
    ArtifactUpload,
    Claimed,
    ClaimedRun,
    ClaimRequest,
    Finish,
    FinishedMany,
    FinishedRun,
    FinishMany,
    HeartbeatResult,
    Held,
    Messages,
    Progress,
    Release,
    Reported,
    RunEnding,
    RunnerRegister,
    RunnerRegistered,
    RunStatus,
    Usage,
)


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
async def register_endpoint(request: Request, body: Body[RunnerRegister]) -> RunnerRegistered:
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
    return RunnerRegistered(runner.uid, runner.team_uid, services.settings.run_lease_s)


@routes.post(
    f"{BASE}/claim",
    "Claim queued runs (long-poll)",
    response=Claimed,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Waits up to wait_s for a QUEUED run of the runner's team (and factory); each run "
    "comes CLAIMED with a lease the runner renews by heartbeat.",
)
async def claim_endpoint(request: Request, body: Body[ClaimRequest]) -> Claimed:
    principal = await principal_of(request)
    ask = await body.read()
    return Claimed(
        await _claim_within(request, principal, ask.runner_uid, ask.max_runs, ask.wait_s)
    )


async def _claim_within(
    request: Request, principal: Principal, runner_uid: str, max_runs: int, wait_s: float
) -> list[ClaimedRun]:
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
) -> list[ClaimedRun]:
    lease_s = services_of(request).settings.run_lease_s
    return await run_execution.claim(conn, runner, lease_s, max_runs)


@routes.post(
    f"{RUN}/heartbeat",
    "Renew a claimed run's lease",
    response=HeartbeatResult,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="Tells the runner whether the run was cancelled or interrupted since its last call.",
)
async def heartbeat_endpoint(request: Request, body: Body[Held]) -> HeartbeatResult:
    principal = await principal_of(request)
    held = await body.read()
    lease_s = services_of(request).settings.run_lease_s
    async with as_runner(request, principal, held.runner_uid) as (conn, runner):
        return await run_execution.heartbeat(conn, runner, request.path_params["run_id"], lease_s)


@routes.post(
    f"{RUN}/progress",
    "Report a run's progress",
    response=RunStatus,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="state INPROGRESS starts a CLAIMED (or unblocks a BLOCKED) run; status_message says "
    "what it does now; session_link points at its live session.",
)
async def progress_endpoint(request: Request, body: Body[Progress]) -> RunStatus:
    principal = await principal_of(request)
    report = await body.read()
    async with as_runner(request, principal, report.runner_uid) as (conn, runner):
        return await run_execution.progress(
            conn,
            runner,
            request.path_params["run_id"],
            state=report.state,
            status_message=report.status_message,
            session_id=report.session_id,
            session_link=report.session_link,
        )


@routes.post(
    f"{RUN}/messages",
    "Append conversation messages",
    response=Appended,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
)
async def messages_endpoint(request: Request, body: Body[Messages]) -> Appended:
    principal = await principal_of(request)
    batch = await body.read()
    async with as_runner(request, principal, batch.runner_uid) as (conn, runner):
        count = await run_execution.append_messages(
            conn,
            runner,
            request.path_params["run_id"],
            [(m.role, m.text) for m in batch.messages],
        )
    return Appended(count)


@routes.post(
    f"{RUN}/artifacts",
    "Attach an artifact (a file, or a pull request)",
    ok=201,
    response=ArtifactAdded,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="A factory task's run also adds the artifact to the task's outputs.",
)
async def artifact_endpoint(request: Request, body: Body[ArtifactUpload]) -> ArtifactAdded:
    principal = await principal_of(request)
    upload = await body.read()
    artifact = upload.stored()
    async with as_runner(request, principal, upload.runner_uid) as (conn, runner):
        run_id = request.path_params["run_id"]
        return await run_execution.add_artifact(conn, runner, run_id, artifact)


@routes.post(
    f"{RUN}/usage",
    "Report usage (tokens, dollars per component)",
    response=Reported,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="Each report adds to the run's usage.",
)
async def usage_endpoint(request: Request, body: Body[Usage]) -> Reported:
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
    return Reported(run_id, True)


@routes.post(
    f"{RUN}/finish",
    "Finish a run",
    response=RunStatus,
    errors=HELD_ERRORS,
    problems=(
        AGENT_ONLY,
        LOST,
        (400, "`invalid_request`: CANCELLED for a run that was not cancelled; or a bad field"),
    ),
    notes="SUCCEEDED or FAILED; CANCELLED acknowledges a cancel the heartbeat reported. The "
    "transcript becomes the run's session_link. A second finish answers 409 `lease_lost`.",
)
async def finish_endpoint(request: Request, body: Body[Finish]) -> RunStatus:
    principal = await principal_of(request)
    done = await body.read()
    async with as_runner(request, principal, done.runner_uid) as (conn, runner):
        run_id = request.path_params["run_id"]
        return await run_finish.finish(conn, runner, run_id, done, _transcript_link(request))


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
async def finish_many_endpoint(request: Request, body: Body[FinishMany]) -> FinishedMany:
    principal = await principal_of(request)
    batch = await body.read()
    endings: list[tuple[str, RunEnding]] = [(item.run_id, item) for item in batch.runs]
    async with as_runner(request, principal, batch.runner_uid) as (conn, runner):
        results = await run_finish.finish_runs(conn, runner, endings, _transcript_link(request))
        claimed = await _claim(request, conn, runner, batch.claim) if batch.claim else []
    if batch.claim and not claimed and batch.wait_s > 0:
        # the finishes are committed; now the long-poll, as /runner/claim
        claimed = await _claim_within(
            request, principal, batch.runner_uid, batch.claim, batch.wait_s
        )
    pairs = zip(endings, results, strict=True)
    finished = [FinishedRun.of(run_id, result) for (run_id, _), result in pairs]
    return FinishedMany(finished, claimed)


@routes.post(
    f"{RUN}/release",
    "Give a run back to the queue",
    response=RunStatus,
    errors=HELD_ERRORS,
    problems=(AGENT_ONLY, LOST),
    notes="For a runner that stops before a run ends: QUEUED again (the claim counts as an "
    "attempt).",
)
async def release_endpoint(request: Request, body: Body[Release]) -> RunStatus:
    principal = await principal_of(request)
    given = await body.read()
    async with as_runner(request, principal, given.runner_uid) as (conn, runner):
        run_id = request.path_params["run_id"]
        released = await run_execution.release(conn, runner, run_id, given.reason)
    services_of(request).runs_queued.notify()
    return released


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
        run = await run_execution.held_run(conn, runner, run_id)
        payload = await run_execution.event_payload(conn, run)
    if payload is None:
        raise NotFound(f"run_id: {run_id} was not started by a webhook delivery")
    return Response(payload, media_type="application/json")
