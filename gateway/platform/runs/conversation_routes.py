"""/agent/conversations/{conversation_id}: follow-up and interrupt, addressed to the
conversation's newest top-level run. Their shapes serve /agent/runs too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs.records import RUN_STATES

if TYPE_CHECKING:
    RunState = str
else:  # the states the domain knows, as an enum
    RunState = Literal[RUN_STATES]

AttachmentId = Annotated[str, Meta(min_length=1, max_length=64)]


class FollowUp(Struct, kw_only=True, forbid_unknown_fields=True):
    message: Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")]
    attachments: (
        Annotated[
            list[AttachmentId],
            Meta(max_length=20, description="attachment ids prepared for the run that receives it"),
        ]
        | None
    ) = None
    mode: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] | None = None

    def request(self) -> conversations.FollowUp:
        return conversations.FollowUp(self.message, tuple(self.attachments or ()), self.mode)


class FollowUpResult(Struct):
    run_id: str
    state: RunState
    routing: Literal["queued", "injected", "resumed", "debug"]


class InterruptResult(Struct):
    run_id: str
    state: RunState
    interrupted: Annotated[bool, Meta(description="always true")]


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
async def followup_endpoint(request: Request, body: Body[FollowUp]) -> Response:
    principal = await principal_of(request)
    followup = (await body.read()).request()
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.follow_up(conn, row, followup))


@routes.post(
    f"{BASE}/interrupt",
    "Interrupt the newest run",
    ok=202,
    response=InterruptResult,
    errors=(*RUN_ERRORS, 409),
    problems=NOT_LIVE,
)
async def interrupt_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.interrupt(conn, row), 202)
