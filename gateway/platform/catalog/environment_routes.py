"""GET /agent/environments: the cloud environments a caller may run in (from configuration),
with the field names of the official client's CloudEnvironment."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Query, Routes
from gateway.platform.catalog import environments
from gateway.platform.catalog.models import Environment, EnvironmentList, EnvironmentQuery

routes = Routes("environments")


@routes.get(
    "/agent/environments",
    "List the environments you may run in",
    response=EnvironmentList,
    errors=(400, 401, 403),
    team=True,
    notes="Owned by the active team (else any of yours), shared with it as a guest, or "
    "link-shared. Configured with GATEWAY_ENVIRONMENTS[_FILE].",
)
async def list_endpoint(request: Request, query: Query[EnvironmentQuery]) -> EnvironmentList:
    principal = await principal_of(request, team_scoped=True)
    sort_by = query.read().sort_by
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    services = services_of(request)
    async with services.database.read() as conn:
        found = await environments.list_environments(
            conn, services.settings.environments, teams, sort_by
        )
    return EnvironmentList([Environment.of(each) for each in found])
