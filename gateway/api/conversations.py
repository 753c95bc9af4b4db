"""/agent/conversations/{conversation_id}: follow-up, interrupt and attachments, addressed to the
conversation's newest top-level run."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_object, json_response
from gateway.domain import conversations


async def followup_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    followup = conversations.parse_followup(await json_object(request))
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.follow_up(conn, row, followup))


async def interrupt_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.interrupt(conn, row), 202)


async def prepare_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    names = conversations.parse_files(await json_object(request, allow_empty=True))
    async with services_of(request).database.transaction() as conn:
        row = await conversations.conversation_run(
            conn, principal, request.path_params["conversation_id"]
        )
        return json_response(await conversations.prepare_attachments(conn, row, names))


BASE = "/agent/conversations/{conversation_id}"
routes = [
    Route(f"{BASE}/followups", followup_endpoint, methods=["POST"]),
    Route(f"{BASE}/interrupt", interrupt_endpoint, methods=["POST"]),
    Route(f"{BASE}/attachments/prepare", prepare_endpoint, methods=["POST"]),
]
