"""GET /factory and GET /factory/{uid}."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import Factory, list_factories
from gateway.foundation.api.auth import cursors_of, factory_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Query, Routes
from gateway.platform.factories.models import FactoryList, FactoryQuery

routes = Routes("factories")


@routes.get(
    "/factory", "List accessible factories", response=FactoryList, errors=(400, 401, 403), team=True
)
async def list_factories_endpoint(request: Request, query: Query[FactoryQuery]) -> FactoryList:
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
    return FactoryList(page, page_info(cursor))


@routes.get("/factory/{uid}", "Get a factory", response=Factory)
async def get_factory_endpoint(request: Request) -> Factory:
    return await factory_of(request)
