"""/agent/conversations/{conversation_id}: follow-up and interrupt, addressed to the
conversation's newest top-level run."""

from __future__ import annotations

from starlette.requests import Request

from gateway.api.auth import principal_of, services_of
from gateway.api.routing import Body, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs.conversation_models import FollowUp, FollowUpResult, InterruptResult

RUN_ERRORS = (400, 401, 404)  # a run the caller cannot see is a 404, never a 403
UNKNOWN_ATTACHMENT = ((422, "`unknown_attachment`: not prepared for the receiving run"),)
NOT_LIVE = ((409, "`run_not_live`: only a CLAIMED or INPROGRESS cloud run"),)
routes = Routes("runs")
BASE = "/agent/conversations/{conversation_id}"


@routes.post(
    f"{BASE}/followups",
    "Follow-up to the newest run",
    response=FollowUpResult,
    errors=(*RUN_ERRORS, 413, 422),
    problems=UNKNOWN_ATTACHMENT,
)
async def followup_endpoint(request: Request, body: Body[FollowUp]) -> FollowUpResult:
    principal = await principal_of(request)
    followup = await body.read()
    async with services_of(request).database.transaction() as conn:
        run = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return await conversations.follow_up(conn, run, followup)


@routes.post(
    f"{BASE}/interrupt",
    "Interrupt the newest run",
    ok=202,
    response=InterruptResult,
    errors=(*RUN_ERRORS, 409),
    problems=NOT_LIVE,
)
async def interrupt_endpoint(request: Request) -> InterruptResult:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        run = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return await conversations.interrupt(conn, run)
