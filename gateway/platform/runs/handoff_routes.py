"""GET /agent/runs/{run_id}/handoff/attachments, and the two public shared-session redirect
lookups (/agent/sessions/{session_uuid}/redirect, /agent/conversations/{id}/redirect)."""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Routes
from gateway.platform.runs import handoff as run_handoff
from gateway.platform.runs.output_routes import signed_url
from gateway.platform.runs.records import visible_run


class HandoffAttachment(Struct):
    attachment_id: Annotated[str, Meta(description="the artifact uid of the file")]
    download_url: Annotated[str, Meta(description="signed, valid for 5 minutes")]
    filename: str
    mime_type: str | None


class HandoffAttachments(Struct):
    attachments: Annotated[
        list[HandoffAttachment],
        Meta(description="files of the latest ended execution; empty when none ended"),
    ]


class SessionRedirect(Struct, kw_only=True):
    conversation_id: str | UnsetType = UNSET


class ConversationRedirect(Struct, kw_only=True):
    session_id: str | UnsetType = UNSET


routes = Routes("runs")


@routes.get(
    "/agent/runs/{run_id}/handoff/attachments",
    "Handoff snapshot attachments of a run, with fresh signed URLs",
    response=HandoffAttachments,
    errors=(401, 404),
)
async def handoff_attachments_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        files = await run_handoff.handoff_files(conn, run.run_id)
    items = [
        {
            "attachment_id": row.artifact_uid,
            "download_url": signed_url(request, row.artifact_uid)[0],
            "filename": row.filename or row.artifact_uid,
            "mime_type": row.mime_type,
        }
        for row in files
    ]
    return json_response({"attachments": items})


@routes.get(
    "/agent/sessions/{session_uuid}/redirect",
    "The conversation of a shared session (public); {} when there is none",
    response=SessionRedirect,
    errors=(),
    public=True,
)
async def session_redirect_endpoint(request: Request) -> Response:
    async with services_of(request).database.read() as conn:
        found = await run_handoff.conversation_of_session(conn, request.path_params["session_uuid"])
    return json_response({} if found is None else {"conversation_id": found})


@routes.get(
    "/agent/conversations/{conversation_id}/redirect",
    "The shared session of a conversation's newest run (public); {} when there is none",
    response=ConversationRedirect,
    errors=(),
    public=True,
)
async def conversation_redirect_endpoint(request: Request) -> Response:
    conversation_id = request.path_params["conversation_id"]
    async with services_of(request).database.read() as conn:
        found = await run_handoff.session_of_conversation(conn, conversation_id)
    return json_response({} if found is None else {"session_id": found})
