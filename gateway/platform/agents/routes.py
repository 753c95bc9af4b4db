"""/agent/identities: the team's agents (create, list, get, update, delete), with the field
names of the official client's AgentResponse; docs/api.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Query, Routes
from gateway.platform.agents import management as agents

AgentType = Literal["FOREMAN", "TRIAGE", "SPEC", "IMPLEMENT", "REVIEW", "VERIFY", "CUSTOM"]
CredentialStrategy = Literal["CREATOR", "EXECUTOR"]
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Setting = Annotated[str, Meta(max_length=2000)]
LongText = Annotated[str, Meta(max_length=100_000)]
McpServers = Annotated[
    dict[str, dict[str, Any]],
    Meta(description="MCP server configurations by name, as in a run's config"),
]
SkillSpec = Annotated[str, Meta(max_length=500, description="owner/repo:skill-name or path")]


class SecretRef(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=200, description="a managed team secret")]


Skills = Annotated[list[SkillSpec], Meta(max_length=50)]
Secrets = Annotated[list[SecretRef], Meta(max_length=50)]


class AgentCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    description: LongText | None = None
    prompt: Annotated[str, Meta(max_length=100_000, description="its runs' base prompt")] | None = (
        None
    )
    agent_type: AgentType | None = None
    base_model: Annotated[Setting, Meta(description="an enabled model of /agent/models")] | None = (
        None
    )
    environment_id: (
        Annotated[Setting, Meta(description="an environment of /agent/environments")] | None
    ) = None
    worker_host: Setting | None = None
    credential_strategy: CredentialStrategy | None = None
    factory_uid: (
        Annotated[Setting, Meta(description="a factory of the team the agent works for")] | None
    ) = None
    mcp_servers: McpServers | None = None
    skills: Skills | None = None
    secrets: Secrets | None = None


class AgentUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Absent or null: unchanged; "" clears a text field, [] a list, {} the MCP servers."""

    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    prompt: LongText | UnsetType | None = UNSET
    agent_type: AgentType | UnsetType | None = UNSET
    base_model: Setting | UnsetType | None = UNSET
    environment_id: Setting | UnsetType | None = UNSET
    worker_host: Setting | UnsetType | None = UNSET
    credential_strategy: CredentialStrategy | UnsetType | None = UNSET
    mcp_servers: McpServers | UnsetType = UNSET
    skills: Skills | UnsetType | None = UNSET
    secrets: Secrets | UnsetType | None = UNSET


class AutoMemory(Struct):
    enabled: bool


class Memory(Struct):
    attached_stores: Annotated[list[dict[str, Any]], Meta(description="always empty here")]
    auto_memory: AutoMemory


class Agent(Struct, kw_only=True):
    """AgentResponse of the official client; optional fields are omitted when unset."""

    uid: str
    name: str
    team_uid: str
    created_at: Timestamp
    updated_at: Timestamp
    available: Annotated[bool, Meta(description="always true: no plan limits here")]
    default_runner_uid: Annotated[str, Meta(description="always empty here")]
    memory: Memory
    skills: list[str]
    secrets: list[SecretRef]
    description: str | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    agent_type: AgentType | UnsetType = UNSET
    base_model: str | UnsetType = UNSET
    environment_id: str | UnsetType = UNSET
    worker_host: str | UnsetType = UNSET
    credential_strategy: CredentialStrategy | UnsetType = UNSET
    factory_uid: str | UnsetType = UNSET
    mcp_servers: McpServers | UnsetType = UNSET


class CreatedAgent(Agent, kw_only=True):
    api_key: Annotated[str, Meta(description="the agent's API key: shown this once only")]


class AgentList(Struct):
    agents: list[Agent]


class AgentFilter(Struct, kw_only=True):
    factory_uid: Annotated[str, Meta(description="only agents linked to this factory")] | None = (
        None
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
async def create_endpoint(request: Request, body: Body[AgentCreate]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    fields = msgspec.to_builtins(await body.read())
    services = services_of(request)
    settings = services.settings
    async with services.database.transaction() as conn:
        row, key = await agents.create_agent(
            conn, principal, fields, models=settings.models, environments=settings.environments
        )
    return json_response(agents.agent_json(row) | {"api_key": key}, 201)


@routes.get(
    "/agent/identities",
    "List the team's agents",
    response=AgentList,
    errors=(400, 401, 403),
    team=True,
)
async def list_endpoint(request: Request, query: Query[AgentFilter]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    factory_uid = query.read().factory_uid or None
    async with services_of(request).database.read() as conn:
        rows = await agents.list_agents(conn, principal, factory_uid)
    return json_response({"agents": [agents.agent_json(row) for row in rows]})


@routes.get(ONE, "Get an agent", response=Agent)
async def get_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row = await agents.get_agent(conn, principal, request.path_params["uid"])
    return json_response(agents.agent_json(row))


@routes.put(
    ONE,
    "Update an agent (fields given only)",
    response=Agent,
    errors=(400, 401, 403, 404, 413),
    problems=(USER_ONLY,),
)
async def update_endpoint(request: Request, body: Body[AgentUpdate]) -> Response:
    principal = await principal_of(request)
    fields = msgspec.to_builtins(await body.read())
    services = services_of(request)
    settings = services.settings
    async with services.database.transaction() as conn:
        row = await agents.update_agent(
            conn,
            principal,
            request.path_params["uid"],
            fields,
            models=settings.models,
            environments=settings.environments,
        )
    return json_response(agents.agent_json(row))


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
