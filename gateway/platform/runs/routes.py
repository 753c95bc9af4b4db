"""/agent/runs: create, list, get, follow up, cancel, interrupt, in the wire format the official
clients parse (docs/runs-and-tasks.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Moment, Timestamp, in_utc
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Body, Query, Routes
from gateway.platform.runs import conversations
from gateway.platform.runs import lifecycle as run_lifecycle
from gateway.platform.runs.conversation_routes import (
    NOT_LIVE,
    RUN_ERRORS,
    UNKNOWN_ATTACHMENT,
    FollowUp,
    FollowUpResult,
    InterruptResult,
    RunState,
)
from gateway.platform.runs.records import one_run_json, runs_json, visible_run
from gateway.platform.runs.standalone import MAX_PROMPT, RunQuery, create_agent_run, list_runs

Text = Annotated[str, Meta(pattern=r"\S")]
ConfigValue = Annotated[str, Meta(max_length=2000)] | None | UnsetType


class AgentConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    """In a request, null values are dropped; an answer holds only the keys that are set."""

    name: ConfigValue = UNSET
    model_id: (
        Annotated[str, Meta(max_length=2000, description="an enabled model of /agent/models")]
        | UnsetType
        | None
    ) = UNSET
    base_prompt: ConfigValue = UNSET
    environment_id: ConfigValue = UNSET
    worker_host: ConfigValue = UNSET
    skill_spec: (
        Annotated[
            str,
            Meta(
                max_length=500,
                description="owner/repo:skill-name or owner/repo:path/to/SKILL.md; names the run "
                "after the skill unless `name` is given",
            ),
        ]
        | UnsetType
        | None
    ) = UNSET
    mcp_servers: dict[str, Any] | UnsetType = UNSET


ONE_OF = "give at most one of parent_run_id and conversation_id"


class RunCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")]
    title: Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")] | None = None
    config: AgentConfig | None = None
    parent_run_id: (
        Annotated[
            str,
            Meta(min_length=1, max_length=64, description=f"start a child in its tree; {ONE_OF}"),
        ]
        | None
    ) = None
    conversation_id: (
        Annotated[
            str,
            Meta(min_length=1, max_length=64, description=f"a new top-level run in it; {ONE_OF}"),
        ]
        | None
    ) = None


class RunCreated(Struct):
    run_id: str
    task_id: str
    state: RunState


class Creator(Struct):
    uid: str
    email: str | None
    display_name: str
    type: Literal["user", "service_account"]


class StatusMessage(Struct):
    message: str
    error_code: str | None
    retryable: bool


class Artifact(Struct, kw_only=True):
    """An attachment the run came with (`type` attachment: for example the payload of the
    delivery that started it), or something it produced (`artifact_type` FILE, PULL_REQUEST,
    PLAN, with its `data`: GET /agent/artifacts/{artifact_uid} has the details)."""

    type: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    content_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    attachment_id: str | UnsetType = UNSET
    artifact_type: str | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    data: dict[str, Any] | UnsetType = UNSET


class Run(Struct, kw_only=True):
    """RunItem, as the official clients parse it; optional fields are omitted when unknown."""

    run_id: str
    task_id: Annotated[str, Meta(description="equals run_id")]
    title: str | None
    prompt: str
    state: RunState
    created_at: Timestamp
    updated_at: Timestamp
    conversation_id: str
    source: Annotated[str, Meta(description="API or WEBHOOK")]
    is_run_type_cancellable: bool
    started_at: Timestamp | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    session_link: str | UnsetType = UNSET
    parent_run_id: str | UnsetType = UNSET
    agent_config: AgentConfig | UnsetType = UNSET
    creator: Creator | UnsetType = UNSET
    metadata: (
        Annotated[
            dict[str, str],
            Meta(description="webhook runs: automation_id, webhook_uid, delivery_id"),
        ]
        | UnsetType
    ) = UNSET
    status_message: StatusMessage | UnsetType = UNSET
    artifacts: list[Artifact] | UnsetType = UNSET


class RunList(Struct):
    runs: list[Run]
    page_info: PageInfo


class RunFilters(Struct, kw_only=True):
    state: Annotated[list[RunState], Meta(description="any of these states")] = []
    name: Annotated[str, Meta(description="agent_config.name")] | None = None
    config_name: Annotated[str, Meta(description="alias of name (name wins)")] | None = None
    model_id: Annotated[str, Meta(description="agent_config.model_id")] | None = None
    creator: Annotated[str, Meta(description="creator uid or email (any case)")] | None = None
    source: Annotated[str, Meta(description="API or WEBHOOK (any case)")] | None = None
    q: Annotated[str, Meta(description="substring of title or prompt (any case)")] | None = None
    created_after: Moment | None = None
    created_before: Moment | None = None
    updated_after: Moment | None = None
    limit: Limit = 50
    cursor: Cursor | None = None
    sort_by: Literal["created_at", "updated_at"] = "updated_at"
    sort_order: Literal["asc", "desc"] = "desc"

    def __post_init__(self) -> None:
        self.created_after = in_utc(self.created_after, "created_after")
        self.created_before = in_utc(self.created_before, "created_before")
        self.updated_after = in_utc(self.updated_after, "updated_after")


routes = Routes("runs")
RUN = "/agent/runs/{run_id}"


@routes.post(
    "/agent/runs",
    "Create a run",
    response=RunCreated,
    errors=(400, 401, 403, 413),
    team=True,
    problems=((403, "`forbidden`: X-Service-Team-Uid is not a team of the caller"),),
)
async def create_run_endpoint(request: Request, body: Body[RunCreate]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    fields: dict[str, Any] = msgspec.to_builtins(await body.read())
    services = services_of(request)
    async with services.database.transaction() as conn:
        row = await create_agent_run(conn, principal, fields, services.settings.models)
    services.runs_queued.notify()
    return json_response({"run_id": row.run_id, "task_id": row.run_id, "state": row.state})


@routes.get("/agent/runs", "List runs", response=RunList, errors=(400, 401))
async def list_runs_endpoint(request: Request, query: Query[RunFilters]) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    params = query.read()
    scope = f"runs:{principal.uid}:{params.sort_by}:{params.sort_order}"
    cursors = cursors_of(request)
    run_query = RunQuery(
        states=tuple(params.state),
        name=params.name or params.config_name or None,
        model_id=params.model_id or None,
        creator=params.creator or None,
        source=params.source or None,
        q=params.q or None,
        created_after=params.created_after,
        created_before=params.created_before,
        updated_after=params.updated_after,
        sort_by=params.sort_by,
        sort_order=params.sort_order,
        limit=params.limit,
        after=cursors.decode_keyset(scope, params.cursor),
    )
    async with services.database.read() as conn:
        rows, more = await list_runs(conn, principal, run_query)
        items = await runs_json(conn, rows)
    cursor = None
    if more:
        last = rows[-1]
        cursor = cursors.encode_keyset(scope, getattr(last, params.sort_by), last.run_id)
    return json_response({"runs": items, "page_info": page_info(cursor)})


@routes.get(RUN, "Get a run", response=Run, errors=RUN_ERRORS)
async def get_run_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await one_run_json(conn, row))


@routes.post(
    f"{RUN}/followups",
    "Send a follow-up",
    response=FollowUpResult,
    errors=(*RUN_ERRORS, 413, 422),
    problems=UNKNOWN_ATTACHMENT,
)
async def followup_endpoint(request: Request, body: Body[FollowUp]) -> Response:
    principal = await principal_of(request)
    followup = (await body.read()).request()
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await conversations.follow_up(conn, row, followup))


@routes.post(
    f"{RUN}/cancel",
    "Cancel a run and its descendants; answers its id",
    response=Annotated[str, Meta(description="the run id")],
    media_type="text/plain",
    errors=(*RUN_ERRORS, 409, 422),
    problems=(
        (400, "`run_terminal`: the run already ended; or `invalid_request`"),
        (409, "`run_pending`: the run is PENDING; retry after a moment"),
        (422, "`not_cancellable`: the service cannot stop runs of this type"),
    ),
)
async def cancel_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        await run_lifecycle.cancel(conn, row)
    # the bare id as text: the official client hands the body to its users as is
    return PlainTextResponse(row.run_id)


@routes.post(
    f"{RUN}/interrupt",
    "Interrupt the current turn",
    ok=202,
    response=InterruptResult,
    errors=(*RUN_ERRORS, 409),
    problems=NOT_LIVE,
)
async def interrupt_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await conversations.interrupt(conn, row), 202)
