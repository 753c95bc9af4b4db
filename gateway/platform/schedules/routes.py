"""/agent/schedules: scheduled agents (create, list, get, update, delete, pause, resume), with
the field names of the official client's ScheduledAgentItem; docs/schedules.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.platform.runs.models import MAX_PROMPT, AgentConfig, Creator
from gateway.platform.schedules import schedules

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
CronSchedule = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        description="5 fields (minute hour day-of-month month day-of-week), in UTC",
    ),
]
Prompt = Annotated[
    str,
    Meta(max_length=MAX_PROMPT, description="required unless agent_config.skill_spec is given"),
]
AgentUid = Annotated[
    str, Meta(min_length=1, max_length=64, description="a team agent to run as (team-owned only)")
]
Metadata = Annotated[
    dict[str, str], Meta(description="at most 20 keys of [a-zA-Z0-9._-]{1,64}; values <= 256 bytes")
]
Mode = Literal["normal", "plan", "orchestrate"]


class ScheduleCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    cron_schedule: CronSchedule
    prompt: Prompt | None = None
    agent_config: AgentConfig | None = None
    agent_uid: AgentUid | None = None
    enabled: Annotated[bool, Meta(description="active at once (default true)")] = True
    metadata: Metadata | None = None
    mode: Mode | None = None
    team: (
        Annotated[bool, Meta(description="team-owned (default for a user of a single team)")] | None
    ) = None


class ScheduleUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Replaces the schedule; agent_config absent or null keeps the current one."""

    name: Name
    cron_schedule: CronSchedule
    enabled: bool
    prompt: Prompt | None = None
    agent_config: AgentConfig | None = None
    agent_uid: AgentUid | None = None
    metadata: Metadata | None = None
    mode: Mode | None = None


class ScheduleScope(Struct):
    type: Literal["User", "Team"]
    uid: str


class ScheduleHistory(Struct):
    last_ran: Timestamp | None
    next_run: Annotated[Timestamp | None, Meta(description="the next slot; null while paused")]


class ScheduledAgent(Struct, kw_only=True):
    id: str
    name: str
    cron_schedule: str
    enabled: bool
    prompt: str
    mode: Mode
    created_at: Timestamp
    updated_at: Timestamp
    scope: ScheduleScope
    history: ScheduleHistory
    agent_config: AgentConfig | UnsetType = UNSET
    agent_uid: str | UnsetType = UNSET
    metadata: dict[str, str] | UnsetType = UNSET
    last_spawn_error: (
        Annotated[str, Meta(description="why the last slot could not start a run")] | UnsetType
    ) = UNSET
    created_by: Creator | UnsetType = UNSET
    updated_by: Creator | UnsetType = UNSET


class ScheduleList(Struct):
    schedules: Annotated[list[ScheduledAgent], Meta(description="sorted by name")]


class ScheduleDeleted(Struct):
    success: bool


routes = Routes("schedules")
BASE = "/agent/schedules"
ONE = BASE + "/{schedule_id}"
WRITE_ERRORS = (400, 401, 403, 404, 413)
USER_ONLY = ((403, "`forbidden`: agent credentials (schedules are managed by users)"),)


async def _answer(request: Request, row: Row[Any], status: int = 200) -> Response:
    async with services_of(request).database.read() as conn:
        (item,) = await schedules.schedules_json(conn, [row])
    return json_response(item, status)


@routes.post(
    BASE,
    "Create a scheduled agent",
    ok=201,
    response=ScheduledAgent,
    errors=(400, 401, 403, 413),
    team=True,
    problems=USER_ONLY,
)
async def create_endpoint(request: Request, body: Body[ScheduleCreate]) -> Response:
    principal = await principal_of(request, team_scoped=True)
    schedules.require_user(principal)
    fields = msgspec.to_builtins(await body.read())
    services = services_of(request)
    async with services.database.transaction() as conn:
        row = await schedules.create_schedule(conn, principal, fields, services.settings.models)
    return await _answer(request, row, 201)


@routes.get(BASE, "List scheduled agents, by name", response=ScheduleList, team=True)
async def list_endpoint(request: Request) -> Response:
    principal = await principal_of(request, team_scoped=True)
    async with services_of(request).database.read() as conn:
        rows = await schedules.list_schedules(conn, principal)
        items = await schedules.schedules_json(conn, rows)
    return json_response({"schedules": items})


@routes.get(ONE, "Get a scheduled agent", response=ScheduledAgent, errors=(401, 404))
async def get_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row = await schedules.get_schedule(conn, principal, request.path_params["schedule_id"])
    return await _answer(request, row)


@routes.put(
    ONE,
    "Update a scheduled agent (every field but agent_config)",
    response=ScheduledAgent,
    errors=WRITE_ERRORS,
    problems=USER_ONLY,
)
async def update_endpoint(request: Request, body: Body[ScheduleUpdate]) -> Response:
    principal = await principal_of(request)
    schedules.require_user(principal)
    fields = msgspec.to_builtins(await body.read())
    services = services_of(request)
    uid = request.path_params["schedule_id"]
    async with services.database.transaction() as conn:
        row = await schedules.update_schedule(
            conn, principal, uid, fields, services.settings.models
        )
    return await _answer(request, row)


@routes.delete(
    ONE,
    "Delete a scheduled agent (its runs stay)",
    response=ScheduleDeleted,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def delete_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        await schedules.delete_schedule(conn, principal, request.path_params["schedule_id"])
    return json_response({"success": True})


async def _set_enabled(request: Request, enabled: bool) -> Response:
    principal = await principal_of(request)
    uid = request.path_params["schedule_id"]
    async with services_of(request).database.transaction() as conn:
        row = await schedules.set_enabled(conn, principal, uid, enabled)
    return await _answer(request, row)


@routes.post(
    ONE + "/pause",
    "Pause a scheduled agent: no slot starts until it is resumed",
    response=ScheduledAgent,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def pause_endpoint(request: Request) -> Response:
    return await _set_enabled(request, False)


@routes.post(
    ONE + "/resume",
    "Resume a scheduled agent from the next slot (missed slots are skipped)",
    response=ScheduledAgent,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def resume_endpoint(request: Request) -> Response:
    return await _set_enabled(request, True)
