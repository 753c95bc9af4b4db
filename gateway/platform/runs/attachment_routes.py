"""Attachments prepared for follow-ups: keyed by conversation (for its newest top-level run) or
by run (spec 4.7, 4.8)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.api.auth import principal_of, services_of
from gateway.api.routing import Body, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs.conversation_models import AttachmentsPrepare, PreparedAttachments
from gateway.platform.runs.conversation_routes import RUN_ERRORS
from gateway.platform.runs.records import visible_run

routes = Routes("runs")


@routes.post(
    "/agent/conversations/{conversation_id}/attachments/prepare",
    "Prepare attachments for the newest run",
    response=PreparedAttachments,
    body_required=False,
    errors=(*RUN_ERRORS, 413),
)
async def conversation_prepare_endpoint(
    request: Request, body: Body[AttachmentsPrepare]
) -> PreparedAttachments:
    principal = await principal_of(request)
    files = await body.read()
    async with services_of(request).database.transaction() as conn:
        run = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return await conversations.prepare_attachments(conn, run, files)


@routes.post(
    "/agent/runs/{run_id}/attachments/prepare",
    "Prepare attachments for this run",
    response=PreparedAttachments,
    body_required=False,
    errors=(*RUN_ERRORS, 413),
    notes="The ids are valid for follow-ups to this run. A follow-up addressed to the "
    "conversation goes to its newest run, and refuses ids prepared for an older one (422 "
    "`unknown_attachment`).",
)
async def run_prepare_endpoint(
    request: Request, body: Body[AttachmentsPrepare]
) -> PreparedAttachments:
    principal = await principal_of(request)
    files = await body.read()
    async with services_of(request).database.transaction() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        return await conversations.prepare_attachments(conn, run, files)
