"""The ceiling: a bare Starlette endpoint that reads the body, parses it with orjson and answers
202. No auth, no Redis, no logging: what the framework and the server cost by themselves."""

from __future__ import annotations

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def receive(request: Request) -> Response:
    body = await request.body()
    orjson.loads(body)
    uid = request.path_params["uid"]
    return Response(
        b'{"delivery_id":"%s"}' % uid.encode(), status_code=202, media_type="application/json"
    )


def create_app() -> Starlette:
    return Starlette(routes=[Route("/webhooks/w/{uid}", receive, methods=["POST"])])
