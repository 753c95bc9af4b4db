"""/agent/conversations/{conversation_id}: follow-up and interrupt, addressed to the
conversation's newest top-level run; the same operations on /agent/runs/{run_id} share their
handling (record/store.addressed_run)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.platform.runs.conversations import follow_ups
from gateway.platform.runs.conversations.models import FollowUp, FollowUpResult, InterruptResult
from gateway.platform.runs.record.store import RUN_ERRORS, addressed_run

FOLLOW_UP_PROBLEMS = (
    (
        409,
        "`debug_session_unavailable`: a debug follow-up to a failed run, and no debug session "
        "can be opened (its runner does not open them, or is offline); nothing was stored",
    ),
    (
        422,
        "`unknown_attachment`: not prepared for the receiving run; `attachment_not_uploaded`: "
        "its content was not uploaded",
    ),
)
NOT_LIVE = ((409, "`run_not_live`: only a CLAIMED or INPROGRESS cloud run"),)
routes = Routes("runs")
BASE = "/agent/conversations/{conversation_id}"


async def follow_up(request: Request, body: Body[FollowUp]) -> FollowUpResult:
    """The follow-up to the addressed run."""
    principal = await principal_of(request)
    followup = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        run = await addressed_run(conn, principal, request.path_params)
        routed = await follow_ups.follow_up(conn, run, followup, services.settings.run_lease_s)
    services.runs_queued.notify()  # a resumed run, or a debug session, for a waiting runner
    return routed


async def interrupt(request: Request) -> InterruptResult:
    """The interrupt of the addressed run."""
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        run = await addressed_run(conn, principal, request.path_params)
        return await follow_ups.interrupt(conn, run)


@routes.post(
    f"{BASE}/followups",
    "Follow-up to the newest run",
    response=FollowUpResult,
    errors=(*RUN_ERRORS, 409, 413, 422),
    problems=FOLLOW_UP_PROBLEMS,
)
async def followup_endpoint(request: Request, body: Body[FollowUp]) -> FollowUpResult:
    return await follow_up(request, body)


@routes.post(
    f"{BASE}/interrupt",
    "Interrupt the newest run",
    ok=202,
    response=InterruptResult,
    errors=(*RUN_ERRORS, 409),
    problems=NOT_LIVE,
)
async def interrupt_endpoint(request: Request) -> InterruptResult:
    return await interrupt(request)
