"""/agent/identities: the team's agents (create, list, get, update, delete), with the field
names of the official client's AgentResponse; docs/api.md."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.platform.agents import management as agents
from gateway.platform.agents.models import (
    Agent,
    AgentCreate,
    AgentFilter,
    AgentList,
    AgentUpdate,
    CreatedAgent,
)

routes = Routes("agents")
ONE = "/agent/identities/{uid}"
USER_ONLY = (403, "`forbidden`: agent credentials, or an agent of another team")
FOREMAN = ((409, "`agent_is_foreman`: make another agent the factory's foreman first"),)


@routes.post(
    "/agent/identities",
    "Create an agent in the active team; answers its API key once",
    ok=201,
    response=CreatedAgent,
    errors=(400, 401, 403, 413),
    team=True,
    problems=((403, "`forbidden`: agent credentials, or X-Service-Team-Uid not a team of yours"),),
)
async def create_endpoint(request: Request, body: Body[AgentCreate]) -> CreatedAgent:
    principal = await principal_of(request, team_scoped=True)
    spec = await body.read()
    services = services_of(request)
    settings = services.settings
    async with services.database.transaction() as conn:
        return await agents.create_agent(
            conn, principal, spec, models=settings.models, environments=settings.environments
        )


@routes.get(
    "/agent/identities",
    "List the team's agents",
    response=AgentList,
    errors=(400, 401, 403),
    team=True,
)
async def list_endpoint(request: Request, query: Query[AgentFilter]) -> AgentList:
    principal = await principal_of(request, team_scoped=True)
    factory_uid = query.read().factory_uid or None
    async with services_of(request).database.read() as conn:
        return AgentList(await agents.list_agents(conn, principal, factory_uid))


@routes.get(ONE, "Get an agent", response=Agent)
async def get_endpoint(request: Request) -> Agent:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await agents.get_agent(conn, principal, request.path_params["uid"])


@routes.put(
    ONE,
    "Update an agent (fields given only)",
    response=Agent,
    errors=(400, 401, 403, 404, 413),
    problems=(USER_ONLY,),
)
async def update_endpoint(request: Request, body: Body[AgentUpdate]) -> Agent:
    principal = await principal_of(request)
    patch = await body.read()
    services = services_of(request)
    settings = services.settings
    async with services.database.transaction() as conn:
        return await agents.update_agent(
            conn,
            principal,
            request.path_params["uid"],
            patch,
            models=settings.models,
            environments=settings.environments,
        )


@routes.delete(
    ONE,
    "Delete an agent and its API keys",
    ok=204,
    errors=(400, 401, 403, 404, 409),
    problems=(USER_ONLY, *FOREMAN),
)
async def delete_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.transaction() as conn:
        await agents.delete_agent(conn, principal, request.path_params["uid"])
    services.agent_keys.forget_owner(request.path_params["uid"])  # its keys stop working now
    services.runners_seen.forget_owner(request.path_params["uid"])
    return Response(status_code=204)
