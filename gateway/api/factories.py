"""GET /factory and GET /factory/{uid}."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response, query_limit
from gateway.api.pagination import page_info
from gateway.domain.factories import get_accessible_factory, list_factories


async def list_factories_endpoint(request: Request) -> Response:
    principal = await principal_of(request, team_scoped=True)
    services = services_of(request)
    limit = query_limit(request)
    search = request.query_params.get("search") or None
    team_uid = request.query_params.get("team_uid") or None
    scope = f"factories:{team_uid or principal.active_team_uid}:{search}"
    after = services.cursors.decode_keyset(scope, request.query_params.get("cursor"))
    async with services.database.read() as conn:
        page, more = await list_factories(
            conn, principal, team_uid=team_uid, search=search, limit=limit, after=after
        )
    cursor = None
    if more:
        last = page[-1]
        cursor = services.cursors.encode_keyset(scope, last.created_at, last.uid)
    return json_response({"factories": [f.to_json() for f in page], "page_info": page_info(cursor)})


async def get_factory_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    return json_response(factory.to_json())


routes = [
    Route("/factory", list_factories_endpoint, methods=["GET"]),
    Route("/factory/{uid}", get_factory_endpoint, methods=["GET"]),
]
