"""GET /factory-inbox and POST /factory-inbox/notifications/read|unread (spec 4.3)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.platform.inbox import reading as inbox_reading
from gateway.platform.inbox.models import (
    InboxFilter,
    InboxList,
    InboxMutation,
    InboxMutationResult,
)
from gateway.platform.inbox.reading import InboxQuery

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
async def list_endpoint(request: Request, query: Query[InboxFilter]) -> InboxList:
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
    return InboxList(page, page_info(cursor))


async def _mark(request: Request, body: Body[InboxMutation], read: bool) -> InboxMutationResult:
    principal = await principal_of(request)
    inbox_reading.require_user(principal)  # 403 before any complaint about the body
    uids = (await body.read()).notification_uids
    async with services_of(request).database.transaction() as conn:
        return InboxMutationResult(await inbox_reading.mark(conn, principal, uids, read=read))


@routes.post(
    "/factory-inbox/notifications/read",
    "Mark notifications read (one outcome each, in request order)",
    response=InboxMutationResult,
    errors=(400, 401, 403, 413),
    problems=USER_ONLY,
)
async def read_endpoint(request: Request, body: Body[InboxMutation]) -> InboxMutationResult:
    return await _mark(request, body, True)


@routes.post(
    "/factory-inbox/notifications/unread",
    "Mark notifications unread (one outcome each, in request order)",
    response=InboxMutationResult,
    errors=(400, 401, 403, 413),
    problems=USER_ONLY,
)
async def unread_endpoint(request: Request, body: Body[InboxMutation]) -> InboxMutationResult:
    return await _mark(request, body, False)
