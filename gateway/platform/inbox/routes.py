"""GET /factory-inbox and POST /factory-inbox/notifications/read|unread (spec 4.3)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Timestamp
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Body, Query, Routes
from gateway.platform.inbox import reading as inbox_reading
from gateway.platform.inbox.reading import InboxQuery

Kind = Literal["run_failed", "run_needs_input", "task_stage_changed", "dispatch_failed"]
NotificationUid = Annotated[str, Meta(min_length=1, max_length=64)]


class Notification(Struct, kw_only=True):
    uid: str
    factory_uid: str
    kind: Kind
    title: str
    detail: str | None
    run_id: Annotated[str | None, Meta(description="the run it is about")]
    task_uid: Annotated[str | None, Meta(description="the task it is about")]
    created_at: Timestamp
    is_read: (
        Annotated[bool, Meta(description="the caller's read state: `mine` scope only")] | UnsetType
    ) = UNSET


class InboxList(Struct):
    notifications: list[Notification]
    page_info: PageInfo


class InboxFilter(Struct, kw_only=True):
    scope: Annotated[
        Literal["mine", "team"],
        Meta(description="mine (user credentials): yours; team: every live recipient's"),
    ] = "mine"
    factory_uid: Annotated[str, Meta(description="only this factory's (if authorized)")] | None = (
        None
    )
    recipient_uid: (
        Annotated[str, Meta(description="a user uid; in `mine` it can only match the caller")]
        | None
    ) = None
    limit: Limit = 50
    cursor: Cursor | None = None


class InboxMutation(Struct, kw_only=True, forbid_unknown_fields=True):
    notification_uids: Annotated[list[NotificationUid], Meta(min_length=1, max_length=100)]


class MutationOutcome(Struct):
    notification_uid: str
    success: bool
    error: Annotated[
        Literal["forbidden", "not_recipient", "not_active"] | None,
        Meta(description="why it was not changed; null on success (a missing one is a no-op)"),
    ]


class InboxMutationResult(Struct):
    results: Annotated[list[MutationOutcome], Meta(description="one per uid, in request order")]


routes = Routes("inbox")
USER_ONLY = ((403, "`forbidden`: agent credentials (a user's read state only)"),)


@routes.get(
    "/factory-inbox",
    "List active notifications of the authorized factories, newest first",
    response=InboxList,
    errors=(400, 401, 403),
    team=True,
    problems=((400, "`invalid_request`: scope, limit, cursor, or `mine` with agent credentials"),),
)
async def list_endpoint(request: Request, query: Query[InboxFilter]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    params = query.read()
    factory_uid, recipient_uid = params.factory_uid or None, params.recipient_uid or None
    scope = f"inbox:{params.scope}:{principal.active_team_uid}:{factory_uid}:{recipient_uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    listing = InboxQuery(params.scope, factory_uid, recipient_uid, params.limit, after)
    async with services_of(request).database.read() as conn:
        page, more = await inbox_reading.list_notifications(conn, principal, listing)
    cursor = cursors.encode_keyset(scope, page[-1].created_at, page[-1].uid) if more else None
    items = [inbox_reading.notification_json(row, params.scope) for row in page]
    return json_response({"notifications": items, "page_info": page_info(cursor)})


async def _mark(request: Request, body: Body[InboxMutation], read: bool) -> Response:
    principal = await principal_of(request)
    inbox_reading.require_user(principal)  # 403 before any complaint about the body
    uids = (await body.read()).notification_uids
    async with services_of(request).database.transaction() as conn:
        results = await inbox_reading.mark(conn, principal, uids, read=read)
    return json_response({"results": results})


@routes.post(
    "/factory-inbox/notifications/read",
    "Mark notifications read (one outcome each, in request order)",
    response=InboxMutationResult,
    errors=(400, 401, 403, 413),
    problems=USER_ONLY,
)
async def read_endpoint(request: Request, body: Body[InboxMutation]) -> Response:
    return await _mark(request, body, True)


@routes.post(
    "/factory-inbox/notifications/unread",
    "Mark notifications unread (one outcome each, in request order)",
    response=InboxMutationResult,
    errors=(400, 401, 403, 413),
    problems=USER_ONLY,
)
async def unread_endpoint(request: Request, body: Body[InboxMutation]) -> Response:
    return await _mark(request, body, False)
