"""Attachments prepared for follow-ups: keyed by conversation (for its newest top-level run) or
by run (spec 4.7, 4.8)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs.conversation_routes import RUN_ERRORS
from gateway.platform.runs.records import visible_run


class FileSpec(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=300)] | None = None


class AttachmentsPrepare(Struct, kw_only=True, forbid_unknown_fields=True):
    files: (
        Annotated[
            list[FileSpec],
            Meta(min_length=1, max_length=20, description="absent: one attachment without a name"),
        ]
        | None
    ) = None

    def names(self) -> list[str | None]:
        return [None] if self.files is None else [file.name for file in self.files]


class PreparedAttachment(Struct):
    attachment_id: str
    name: str | None


class PreparedAttachments(Struct):
    attachments: list[PreparedAttachment]
    run_id: Annotated[str, Meta(description="the run the ids are valid for")]
    conversation_id: str


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
) -> Response:
    principal = await principal_of(request)
    names = (await body.read()).names()
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.prepare_attachments(conn, row, names))


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
async def run_prepare_endpoint(request: Request, body: Body[AttachmentsPrepare]) -> Response:
    principal = await principal_of(request)
    names = (await body.read()).names()
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await conversations.prepare_attachments(conn, row, names))
