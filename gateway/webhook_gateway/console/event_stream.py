"""GET /console/events/stream: the events of the logged-in key's teams as Server-Sent Events,
for console.js. A page's EventSource sends the session cookie and no Authorization header, so
the API's own stream (GET /api/v1/events/stream, Bearer keys only) cannot be used from a page;
this one is authorised by the console's session, as every console page. The same records as
the API's stream (`id:` the event's number, `event:` its type, `data:` its body); the stream
starts with the next event (a page that reconnects re-reads its fragments anyway)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api import sse
from gateway.foundation.events import reading
from gateway.foundation.events.log import body
from gateway.foundation.services import Services
from gateway.webhook_gateway.console.html import LIVE_TYPES
from gateway.webhook_gateway.console.pages import signed_in

PAGE = 500


@signed_in
async def stream(request: Request, services: Services, principal: Principal) -> Response:
    database = services.database
    teams = sorted(principal.team_uids)
    types = LIVE_TYPES
    async with database.read() as conn:
        start = await reading.latest(conn)

    async def fetch(position: object) -> tuple[list[sse.Record], object]:
        after = int(str(position))
        async with database.read() as conn:
            found, reached = await reading.next_page(conn, teams, after, types, PAGE)
        return [(str(e.seq), e.type, body(e.type, e.at, e.data)) for e in found], reached

    return StreamingResponse(
        sse.follow(fetch, start), media_type="text/event-stream", headers=sse.STREAM_HEADERS
    )
