"""Smee-compatible channels (docs/events.md#smee-compatible-channels): created, listed and
revoked under a webhook or provider connection; followed at GET /channels/{token}, the
capability URL `smee --url` takes."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.foundation.api import sse
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.foundation.openapi import Header
from gateway.kernel.errors import NotFound
from gateway.webhook_gateway.deliveries import channels
from gateway.webhook_gateway.deliveries.channel_models import (
    ChannelCreate,
    ChannelList,
    DeliveryChannel,
)
from gateway.webhook_gateway.deliveries.smee import RESUMES, message
from gateway.webhook_gateway.deliveries.stream import Follower, resume_point, stream_id

routes = Routes("deliveries")
SOURCES = (
    ("webhook", "webhook_uid", "/webhooks/{webhook_uid}/channels", "a webhook's"),
    (
        "connection",
        "connection_uid",
        "/provider-connections/{connection_uid}/channels",
        "a provider connection's",
    ),
)
RECHECK_S = 5.0  # a revoked channel's open stream ends within this
RETRY_MS = 1000  # smee-client reconnects this soon after a dropped connection
RESUME = Header(
    "Last-Event-ID",
    "resume after this message's `id` (`<ms>.<delivery id>`): EventSource sends it",
    max_length=400,
)
STREAM_NOTES = (
    "No Authorization: the token in the path is the credential (a channel's `url`, shown once "
    "at creation). Each message (`id:` `<ms>.<delivery id>`, no event name) is smee.io's: "
    "`data:` the delivery's stored headers as keys (lower-case; credentials and signatures "
    "left out) beside `body`, its JSON body. Run `smee --url <url> --target <local URL>`. A "
    "reconnect with Last-Event-ID resumes after that delivery, nothing repeated. An unknown or "
    "revoked token, or a deleted source: 404; a stream open on a channel revoked ends."
)


def _register(kind: str, param: str, base: str, whose: str) -> None:
    async def create(request: Request, body: Body[ChannelCreate]) -> DeliveryChannel:
        principal = await principal_of(request)
        spec = await body.read()
        services = services_of(request)
        uid = request.path_params[param]
        base_url = services.settings.console_base_url
        async with services.database.transaction() as conn:
            team_uid = await channels.source_team(conn, principal, kind, uid)
            return await channels.create_channel(conn, principal, uid, team_uid, spec, base_url)

    async def list_all(request: Request) -> ChannelList:
        principal = await principal_of(request)
        uid = request.path_params[param]
        async with services_of(request).database.read() as conn:
            await channels.source_team(conn, principal, kind, uid)
            return ChannelList(channels=await channels.list_channels(conn, uid))

    async def revoke(request: Request) -> Response:
        principal = await principal_of(request)
        uid = request.path_params[param]
        async with services_of(request).database.transaction() as conn:
            await channels.source_team(conn, principal, kind, uid)
            await channels.revoke_channel(conn, principal, uid, request.path_params["channel_uid"])
        return Response(status_code=204)

    for handler in (create, list_all, revoke):
        handler.__name__ = f"{kind}_channel_{handler.__name__}"
    routes.post(
        base,
        f"Open a smee-compatible channel of {whose} deliveries",
        ok=201,
        response=DeliveryChannel,
        body_required=False,
        errors=(400, 401, 403, 404, 413),
        notes="User credentials of the source's team. The answer's `url` (shown once) is what "
        "`smee --url` takes; its token is the only credential, so treat it as a secret.",
    )(create)
    routes.get(base, f"List the channels of {whose} deliveries", response=ChannelList)(list_all)
    routes.delete(base + "/{channel_uid}", "Revoke a channel", ok=204, errors=(401, 403, 404))(
        revoke
    )


for _source in SOURCES:
    _register(*_source)


@routes.get(
    "/channels/{token}",
    "Follow a channel's deliveries in smee.io's format (Server-Sent Events)",
    public=True,
    response=str,
    media_type="text/event-stream",
    errors=(400, 404),
    headers=(RESUME,),
    notes=STREAM_NOTES,
)
async def follow_channel(request: Request) -> Response:
    database = services_of(request).database
    async with database.read() as conn:
        found = await channels.resolve(conn, request.path_params["token"])
    if found is None:
        raise NotFound("token: no such channel, or revoked")
    channel_uid, source_uid = found
    last_event_id = request.headers.get("last-event-id")
    greeting: list[sse.Record] = []
    if last_event_id is None:
        # smee.io's `ready` (smee-client forwards only `message`s): its id is where this
        # stream starts, so a reconnect before the first delivery resumes from there
        last_event_id = f"{int(time.time() * 1000)}."
        greeting.append((last_event_id, "ready", b"{}"))
    follower = _follower(channel_uid, source_uid, last_event_id)
    RESUMES.put(channel_uid, last_event_id, follower, None)

    async def fetch(position: object) -> tuple[list[sse.Record], object]:
        # position: (when the channel was last seen open, the last id sent)
        checked, last = position if isinstance(position, tuple) else (time.monotonic(), None)
        async with database.read() as conn:
            if time.monotonic() - checked >= RECHECK_S:
                if not await channels.still_open(conn, channel_uid):
                    raise sse.Ended
                checked = time.monotonic()
            found = await follower.next_page(conn)
        records = [(stream_id(i.received_at, i.delivery_id), "", message(i)) for i in found]
        if greeting:
            records, greeting[:] = [*greeting, *records], []
        if records:
            RESUMES.put(channel_uid, records[-1][0], follower, last)
            last = records[-1][0]
        return records, (checked, last)

    return StreamingResponse(
        sse.follow(fetch, (time.monotonic(), last_event_id), retry_ms=RETRY_MS),
        media_type="text/event-stream",
        headers=sse.STREAM_HEADERS,
    )


def _follower(channel_uid: str, source_uid: str, last_event_id: str) -> Follower:
    """A reconnect continues the follower it left in this process; else the stream starts
    after the delivery its id names (a new stream's id names none: its start)."""
    after = resume_point(last_event_id)
    kept = RESUMES.find(channel_uid, last_event_id)
    if kept is not None:
        return kept
    return Follower(source_uid, datetime.fromtimestamp(after[0] / 1000, UTC), after)
