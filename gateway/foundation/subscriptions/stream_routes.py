"""GET /events/stream: the team's events as Server-Sent Events, the same bodies subscribers
receive (`{type, timestamp, data}`), `id:` the event's number; a client that reconnects with
`Last-Event-ID` gets what it missed (the log keeps at least 24 h)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.foundation.accounts.identities import creation_team
from gateway.foundation.api import sse
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Query, Routes
from gateway.foundation.events import reading
from gateway.foundation.events.catalogue import check_patterns, expand
from gateway.foundation.events.log import body
from gateway.foundation.openapi import Header
from gateway.foundation.store import Database
from gateway.foundation.subscriptions.models import StreamQuery
from gateway.kernel.errors import InvalidRequest

routes = Routes("event subscriptions")
PAGE = 500


@routes.get(
    "/events/stream",
    "Follow the team's events (Server-Sent Events)",
    team=True,
    response=str,
    media_type="text/event-stream",
    errors=(400, 401, 403),
    headers=(
        Header(
            "Last-Event-ID",
            "resume after this event's `id` (events are kept at least 24 h)",
            max_length=20,
        ),
    ),
    notes="Each message: `id:` the event's number, `event:` its type, `data:` its body "
    "`{type, timestamp, data}` as subscribers receive it. A `: heartbeat` comment comes every "
    "15 s when nothing else does. Without Last-Event-ID the stream starts with the next event.",
)
async def stream(request: Request, query: Query[StreamQuery]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    wanted = query.read().types
    patterns = [p.strip() for p in wanted.split(",") if p.strip()] if wanted else ["*"]
    types = expand(check_patterns(patterns, "types"))
    team_uid = creation_team(principal)
    database = services_of(request).database
    start = await _start(database, request.headers.get("last-event-id"))

    async def fetch(position: object) -> tuple[list[sse.Record], object]:
        after = int(str(position))
        async with database.read() as conn:
            found, reached = await reading.next_page(conn, [team_uid], after, types, PAGE)
        records = [(str(e.seq), e.type, body(e.type, e.at, e.data)) for e in found]
        return records, reached

    return StreamingResponse(
        sse.follow(fetch, start), media_type="text/event-stream", headers=sse.STREAM_HEADERS
    )


async def _start(database: Database, last_event_id: str | None) -> int:
    """The number after which the stream starts: Last-Event-ID, else the log's end."""
    if last_event_id is not None:
        if not last_event_id.strip().isdigit():
            raise InvalidRequest("Last-Event-ID: expected an event id (a number)")
        return int(last_event_id)
    async with database.read() as conn:
        return await reading.latest(conn)
