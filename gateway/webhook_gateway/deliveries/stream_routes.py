"""GET /webhooks/{uid}/deliveries/stream and /provider-connections/{uid}/deliveries/stream:
a source's accepted deliveries as Server-Sent Events, raw body and headers (`gateway listen`
follows them; docs/events.md#gateway-listen)."""

from __future__ import annotations

import msgspec
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api import sse
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Routes
from gateway.foundation.openapi import Header
from gateway.foundation.store import tables as t
from gateway.kernel.errors import NotFound
from gateway.webhook_gateway.connections.management import visible_row
from gateway.webhook_gateway.deliveries.stream import Follower, start_of, stream_id

routes = Routes("deliveries")
RESUME = Header(
    "Last-Event-ID", "resume after this message's `id` (`<ms>.<delivery id>`)", max_length=400
)
NOTES = (
    "Each message: `id:` `<ms>.<delivery id>`, `event: delivery`, `data:` `{delivery_id, "
    "source_uid, received_at, headers: [[name, value]...], body_base64}`: the accepted "
    "deliveries as they are logged, in order; headers the log redacts (credentials, "
    "signatures) are left out. A `: heartbeat` comment every 15 s. Reconnect with "
    "Last-Event-ID: deliveries up to 60 s before it come again; drop the ids you have."
)


async def _webhook(request: Request, principal: Principal, uid: str) -> None:
    w = t.webhooks
    async with services_of(request).database.read() as conn:
        query = select(w.c.factory_uid).where(w.c.uid == uid, w.c.deleted_at.is_(None))
        factory_uid = (await conn.execute(query)).scalar()
        if factory_uid is None:
            raise NotFound(f"webhook_uid: no webhook {uid}")
        await get_accessible_factory(conn, principal, factory_uid)


async def _connection(request: Request, principal: Principal, uid: str) -> None:
    async with services_of(request).database.read() as conn:
        await visible_row(conn, principal, uid)


def _stream(request: Request, uid: str) -> Response:
    follower = Follower(uid, start_of(request.headers.get("last-event-id")))
    database = services_of(request).database

    async def fetch(position: object) -> tuple[list[sse.Record], object]:
        async with database.read() as conn:
            found = await follower.next_page(conn)
        return [
            (stream_id(item.received_at, item.delivery_id), "delivery", msgspec.json.encode(item))
            for item in found
        ], position

    return StreamingResponse(
        sse.follow(fetch, None), media_type="text/event-stream", headers=sse.STREAM_HEADERS
    )


@routes.get(
    "/webhooks/{webhook_uid}/deliveries/stream",
    "Follow a webhook's deliveries (Server-Sent Events)",
    response=str,
    media_type="text/event-stream",
    errors=(400, 401, 403, 404),
    headers=(RESUME,),
    notes=NOTES,
)
async def webhook_stream(request: Request) -> Response:
    principal = await principal_of(request)
    uid = request.path_params["webhook_uid"]
    await _webhook(request, principal, uid)
    return _stream(request, uid)


@routes.get(
    "/provider-connections/{connection_uid}/deliveries/stream",
    "Follow a provider connection's deliveries (Server-Sent Events)",
    response=str,
    media_type="text/event-stream",
    errors=(400, 401, 403, 404),
    headers=(RESUME,),
    notes=NOTES,
)
async def connection_stream(request: Request) -> Response:
    principal = await principal_of(request)
    uid = request.path_params["connection_uid"]
    await _connection(request, principal, uid)
    return _stream(request, uid)
