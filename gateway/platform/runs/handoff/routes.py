"""GET /agent/runs/{run_id}/handoff/attachments, and the two public shared-session redirect
lookups (/agent/sessions/{session_uuid}/redirect, /agent/conversations/{id}/redirect)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Routes
from gateway.platform.runs.handoff import reads as run_handoff
from gateway.platform.runs.handoff.models import (
    ConversationRedirect,
    HandoffAttachments,
    SessionRedirect,
)
from gateway.platform.runs.outputs.routes import download_url
from gateway.platform.runs.record.store import visible_run

routes = Routes("runs")


@routes.get(
    "/agent/runs/{run_id}/handoff/attachments",
    "Handoff snapshot attachments of a run, with fresh signed URLs",
    response=HandoffAttachments,
    errors=(401, 404),
)
async def handoff_attachments_endpoint(request: Request) -> HandoffAttachments:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        return await run_handoff.handoff_attachments(conn, run.run_id, download_url(request))


@routes.get(
    "/agent/sessions/{session_uuid}/redirect",
    "The conversation of a shared session (public); {} when there is none",
    response=SessionRedirect,
    errors=(),
    public=True,
)
async def session_redirect_endpoint(request: Request) -> SessionRedirect:
    async with services_of(request).database.read() as conn:
        return await run_handoff.session_redirect(conn, request.path_params["session_uuid"])


@routes.get(
    "/agent/conversations/{conversation_id}/redirect",
    "The shared session of a conversation's newest run (public); {} when there is none",
    response=ConversationRedirect,
    errors=(),
    public=True,
)
async def conversation_redirect_endpoint(request: Request) -> ConversationRedirect:
    conversation_id = request.path_params["conversation_id"]
    async with services_of(request).database.read() as conn:
        return await run_handoff.conversation_redirect(conn, conversation_id)
