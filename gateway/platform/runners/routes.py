"""The runner protocol (agent API keys): register, claim runs with a lease, heartbeat, report
progress, messages, artifacts and usage, finish or give back (docs/runs-and-tasks.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Handler, Routes
from gateway.foundation.metrics.counts import COUNTS
from gateway.kernel.errors import NotFound
from gateway.kernel.security import SecretBox
from gateway.platform.runners import (
    checkout_handover,
    claims,
    debug_sessions,
    leases,
    registry,
    reports,
)
from gateway.platform.runners import finish as run_finish
from gateway.platform.runners import usage as run_usage
from gateway.platform.runners.attachment_files import message_files, with_files
from gateway.platform.runners.handover import event_payload, with_secrets
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
from gateway.platform.runners.registry import Runner
from gateway.platform.runs.attachments.routes import attachment_links


@asynccontextmanager
async def as_runner(
    request: Request, principal: Principal, runner_uid: str
) -> AsyncIterator[tuple[AsyncConnection, Runner]]:
    """A transaction on behalf of the caller's runner (404 for anyone else's)."""
    services = services_of(request)
    async with services.database.transaction() as conn:
        runner = await registry.runner_of(conn, principal, runner_uid, services.runners_seen)
        yield conn, runner


class _ByRunner(Protocol):
    @property
    def runner_uid(self) -> str: ...


B = TypeVar("B", bound=_ByRunner)


@asynccontextmanager
async def held_by(
    request: Request, body: Body[B]
) -> AsyncIterator[tuple[AsyncConnection, Runner, B]]:
    """The caller's body, then a transaction on behalf of the runner it names (as_runner)."""
    principal = await principal_of(request)
    spec = await body.read()
    async with as_runner(request, principal, spec.runner_uid) as (conn, runner):
        yield conn, runner, spec


routes = Routes("runners")
BASE = "/runner"
RUN = f"{BASE}/runs/{{run_id}}"
AGENT_ONLY = (403, "`forbidden`: not an agent API key")
LOST = (409, "`lease_lost`: this runner does not hold the run (finished, expired, re-claimed)")
HELD_ERRORS = (400, 401, 403, 404, 409, 413)
H = TypeVar("H", bound=Handler)


def on_held_run(
    action: str, summary: str, *problems: tuple[int, str], **details: Any
) -> Callable[[H], H]:
    """A POST on a run the calling runner holds: 403 for other callers, 409 once it is not
    held, and `problems` of its own."""
    return routes.post(
        f"{RUN}/{action}",
        summary,
        errors=HELD_ERRORS,
        problems=(AGENT_ONLY, LOST, *problems),
        **details,
    )


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
        runner = await registry.register(
            conn,
            principal,
            name=spec.name,
            host=spec.host,
            factory_uid=spec.factory_uid,
            concurrency=spec.concurrency,
            version=spec.version,
            worker_id=spec.worker_id,
            debug_sessions=spec.debug_sessions,
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
        try:
            async with as_runner(request, principal, runner_uid) as (conn, runner):
                claimed, wants = await _claim(request, conn, runner, max_runs)
                if claimed and await request.is_disconnected():
                    raise _RunnerGone
        except _RunnerGone:
            return _counted([])
        left = deadline - time.monotonic()
        if claimed or left <= 0:
            await checkout_handover.hand_over(wants, services_of(request).checkout_token)
            return _counted(claimed)
        # no connection is held while waiting; runs queued by this process wake the wait at
        # once, others' are looked for a few times a second; a runner that went away stops
        # the wait (a shutdown does not wait for it)
        if not await queued.wait(ticket, min(pause, left)):
            pause = min(pause * 2, 0.5)
        if await request.is_disconnected():
            return _counted([])


class _RunnerGone(Exception):
    """The runner hung up (a stopping runner cuts its long-poll short) while runs were being
    claimed for it: the claim is rolled back, so they stay QUEUED for another runner instead
    of waiting out a lease nobody renews."""


def _counted(claimed: list[ClaimedRun]) -> list[ClaimedRun]:
    """`claimed`, counted in gateway_runner_claims_total: each run handed out, or one empty
    answer."""
    COUNTS.runner_claims["claimed" if claimed else "empty"] += len(claimed) or 1
    return claimed


def settings_box(request: Request) -> SecretBox:
    return services_of(request).secret_box


async def _claim(
    request: Request, conn: AsyncConnection, runner: Runner, max_runs: int
) -> tuple[list[ClaimedRun], list[checkout_handover.Wanted]]:
    """The runs claimed, and the checkout credentials they want (made once the transaction is
    committed: `checkout_handover.hand_over`)."""
    settings = services_of(request).settings
    lease_s = settings.run_lease_s
    claimed = await claims.claim(conn, runner, lease_s, max_runs, settings.worker_wait_s)
    # then the debug sessions asked of this runner (runners/debug_sessions.py)
    claimed += await debug_sessions.claim_sessions(conn, runner, lease_s, max_runs - len(claimed))
    await with_files(conn, claimed, attachment_links(request))
    await with_secrets(conn, runner.team_uid, claimed, settings_box(request))
    wants = await checkout_handover.wanted(conn, runner.team_uid, claimed, settings_box(request))
    return claimed, wants


@on_held_run(
    "heartbeat",
    "Renew a claimed run's lease",
    response=HeartbeatResult,
    notes="Tells the runner whether the run was cancelled or interrupted since its last call.",
)
async def heartbeat_endpoint(request: Request, body: Body[Held]) -> HeartbeatResult:
    lease_s = services_of(request).settings.run_lease_s
    async with held_by(request, body) as (conn, runner, _):
        beat = await claims.heartbeat(conn, runner, request.path_params["run_id"], lease_s)
        await message_files(conn, beat.messages, attachment_links(request))
    return beat


@on_held_run(
    "progress",
    "Report a run's progress",
    response=RunStatus,
    notes="state INPROGRESS starts a CLAIMED (or unblocks a BLOCKED) run; status_message says "
    "what it does now; session_link points at its live session.",
)
async def progress_endpoint(request: Request, body: Body[Progress]) -> RunStatus:
    async with held_by(request, body) as (conn, runner, report):
        return await reports.progress(
            conn,
            runner,
            request.path_params["run_id"],
            state=report.state,
            status_message=report.status_message,
            session_id=report.session_id,
            session_link=report.session_link,
        )


@on_held_run(
    "messages",
    "Append conversation messages",
    response=Appended,
)
async def messages_endpoint(request: Request, body: Body[Messages]) -> Appended:
    async with held_by(request, body) as (conn, runner, batch):
        count = await reports.append_messages(
            conn, runner, request.path_params["run_id"], batch.messages
        )
    return Appended(count)


@on_held_run(
    "artifacts",
    "Attach an artifact (a file, or a pull request)",
    ok=201,
    response=ArtifactAdded,
    notes="A factory task's run also adds the artifact to the task's outputs.",
)
async def artifact_endpoint(request: Request, body: Body[ArtifactUpload]) -> ArtifactAdded:
    principal = await principal_of(request)
    upload = await body.read()
    artifact = upload.stored()
    async with as_runner(request, principal, upload.runner_uid) as (conn, runner):
        run_id = request.path_params["run_id"]
        return await reports.add_artifact(conn, runner, run_id, artifact)


@on_held_run(
    "usage",
    "Report usage (tokens, dollars per component)",
    response=Reported,
    notes="A cumulative snapshot of the execution's usage of one model: it replaces the "
    "previous snapshot of that model; a figure left out is unavailable (null), not 0.",
)
async def usage_endpoint(request: Request, body: Body[Usage]) -> Reported:
    run_id = request.path_params["run_id"]
    async with held_by(request, body) as (conn, runner, usage):
        await run_usage.report_usage(conn, runner, run_id, usage)
    return Reported(run_id, True)


@on_held_run(
    "finish",
    "Finish a run",
    (400, "`invalid_request`: CANCELLED for a run that was not cancelled; or a bad field"),
    response=RunStatus,
    notes="SUCCEEDED or FAILED; CANCELLED acknowledges a cancel the heartbeat reported. The "
    "transcript becomes the run's session_link. A second finish answers 409 `lease_lost`.",
)
async def finish_endpoint(request: Request, body: Body[Finish]) -> RunStatus:
    async with held_by(request, body) as (conn, runner, done):
        run_id = request.path_params["run_id"]
        completed = services_of(request).runs_completed
        link = _transcript_link(request)
        return await run_finish.finish(conn, runner, run_id, done, link, completed)


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
        completed = services_of(request).runs_completed
        link = _transcript_link(request)
        results = await run_finish.finish_runs(conn, runner, endings, link, completed)
        claimed, wants = (
            await _claim(request, conn, runner, batch.claim) if batch.claim else ([], [])
        )
    await checkout_handover.hand_over(wants, services_of(request).checkout_token)
    if batch.claim and not claimed and batch.wait_s > 0:
        # the finishes are committed; now the long-poll, as /runner/claim (which counts it)
        claimed = await _claim_within(
            request, principal, batch.runner_uid, batch.claim, batch.wait_s
        )
    elif batch.claim:
        _counted(claimed)
    pairs = zip(endings, results, strict=True)
    finished = [FinishedRun.of(run_id, result) for (run_id, _), result in pairs]
    return FinishedMany(finished, claimed)


@on_held_run(
    "release",
    "Give a run back to the queue",
    response=RunStatus,
    notes="For a runner that stops before a run ends: QUEUED again (the claim counts as an "
    "attempt).",
)
async def release_endpoint(request: Request, body: Body[Release]) -> RunStatus:
    async with held_by(request, body) as (conn, runner, given):
        run_id = request.path_params["run_id"]
        released = await leases.release(conn, runner, run_id, given.reason)
    services_of(request).runs_queued.notify()
    return released


@on_held_run(
    "event-payload",
    "The webhook payload that started the run",
    (404, "`not_found`: not a webhook run, or no such run"),
    response=Any,
    notes="The delivery's JSON body as received (event-payload.json).",
)
async def event_payload_endpoint(request: Request, body: Body[Held]) -> Response:
    run_id = request.path_params["run_id"]
    async with held_by(request, body) as (conn, runner, _):
        run = await leases.held_run(conn, runner, run_id)
        payload = await event_payload(conn, run)
    if payload is None:
        raise NotFound(f"run_id: {run_id} was not started by a webhook delivery")
    return Response(payload, media_type="application/json")
