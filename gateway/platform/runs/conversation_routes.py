"""/agent/conversations/{conversation_id}: follow-up and interrupt, addressed to the
conversation's newest top-level run; the same operations on /agent/runs/{run_id} share their
handling (`addressed_run`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from gateway.accounts.identities import Principal
from gateway.api.auth import principal_of, services_of
from gateway.api.routing import Body, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs.conversation_models import FollowUp, FollowUpResult, InterruptResult
from gateway.platform.runs.models import RunRecord
from gateway.platform.runs.records import visible_run

RUN_ERRORS = (400, 401, 404)  # a run the caller cannot see is a 404, never a 403
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


async def addressed_run(conn: AsyncConnection, principal: Principal, request: Request) -> RunRecord:
    """The run the path names: its `run_id`, else its conversation's newest top-level run."""
    run_id = request.path_params.get("run_id")
    if run_id is not None:
        return await visible_run(conn, principal, run_id)
    conversation_id = request.path_params["conversation_id"]
    return await conversations.conversation_run(conn, principal, conversation_id)


async def follow_up(request: Request, body: Body[FollowUp]) -> FollowUpResult:
    """The follow-up to the addressed run."""
    principal = await principal_of(request)
    followup = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        run = await addressed_run(conn, principal, request)
        routed = await conversations.follow_up(conn, run, followup, services.settings.run_lease_s)
    services.runs_queued.notify()  # a resumed run, or a debug session, for a waiting runner
    return routed


async def interrupt(request: Request) -> InterruptResult:
    """The interrupt of the addressed run."""
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        return await conversations.interrupt(conn, await addressed_run(conn, principal, request))


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
