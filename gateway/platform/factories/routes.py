"""GET /factory and GET /factory/{uid}."""

from __future__ import annotations

from msgspec import Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory, list_factories
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Timestamp
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Query, Routes


class Factory(Struct):
    uid: str
    name: str
    alias: str | None
    team_uid: str
    foreman_agent_uid: str | None
    created_at: Timestamp
    updated_at: Timestamp


class FactoryList(Struct):
    factories: list[Factory]
    page_info: PageInfo


class FactoryQuery(Struct, kw_only=True):
    team_uid: str | None = None
    search: str | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


routes = Routes("factories")


@routes.get(
    "/factory", "List accessible factories", response=FactoryList, errors=(400, 401, 403), team=True
)
async def list_factories_endpoint(request: Request, query: Query[FactoryQuery]) -> Response:
    params = query.read()
    search = params.search or None
    team_uid = params.team_uid or None
    # team_uid takes precedence over the header (spec 5.4), which is then not read at all
    principal = await principal_of(request, team_scoped=team_uid is None)
    services = services_of(request)
    scope = f"factories:{team_uid or principal.active_team_uid}:{search}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    async with services.database.read() as conn:
        page, more = await list_factories(
            conn, principal, team_uid=team_uid, search=search, limit=params.limit, after=after
        )
    cursor = None
    if more:
        last = page[-1]
        cursor = cursors.encode_keyset(scope, last.created_at, last.uid)
    return json_response({"factories": [f.to_json() for f in page], "page_info": page_info(cursor)})


@routes.get("/factory/{uid}", "Get a factory", response=Factory)
async def get_factory_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    return json_response(factory.to_json())
