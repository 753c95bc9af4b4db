"""/agent/schedules: scheduled agents (create, list, get, update, delete, pause, resume), with
the field names of the official client's ScheduledAgentItem; docs/schedules.md."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.platform.schedules import schedules
from gateway.platform.schedules.models import (
    ScheduleCreate,
    ScheduledAgent,
    ScheduleDeleted,
    ScheduleList,
    ScheduleUpdate,
)

routes = Routes("schedules")
BASE = "/agent/schedules"
ONE = BASE + "/{schedule_id}"
WRITE_ERRORS = (400, 401, 403, 404, 413)
USER_ONLY = ((403, "`forbidden`: agent credentials (schedules are managed by users)"),)


@routes.post(
    BASE,
    "Create a scheduled agent",
    ok=201,
    response=ScheduledAgent,
    errors=(400, 401, 403, 413),
    team=True,
    problems=USER_ONLY,
)
async def create_endpoint(request: Request, body: Body[ScheduleCreate]) -> ScheduledAgent:
    principal = await principal_of(request, team_scoped=True)
    schedules.require_user(principal)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        return await schedules.create_schedule(conn, principal, spec, services.settings.models)


@routes.get(BASE, "List scheduled agents, by name", response=ScheduleList, team=True)
async def list_endpoint(request: Request) -> ScheduleList:
    principal = await principal_of(request, team_scoped=True)
    async with services_of(request).database.read() as conn:
        return ScheduleList(await schedules.list_schedules(conn, principal))


@routes.get(ONE, "Get a scheduled agent", response=ScheduledAgent, errors=(401, 404))
async def get_endpoint(request: Request) -> ScheduledAgent:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await schedules.get_schedule(conn, principal, request.path_params["schedule_id"])


@routes.put(
    ONE,
    "Update a scheduled agent (every field but agent_config)",
    response=ScheduledAgent,
    errors=WRITE_ERRORS,
    problems=USER_ONLY,
)
async def update_endpoint(request: Request, body: Body[ScheduleUpdate]) -> ScheduledAgent:
    principal = await principal_of(request)
    schedules.require_user(principal)
    spec = await body.read()
    services = services_of(request)
    uid = request.path_params["schedule_id"]
    async with services.database.transaction() as conn:
        return await schedules.update_schedule(conn, principal, uid, spec, services.settings.models)


@routes.delete(
    ONE,
    "Delete a scheduled agent (its runs stay)",
    response=ScheduleDeleted,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def delete_endpoint(request: Request) -> ScheduleDeleted:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        await schedules.delete_schedule(conn, principal, request.path_params["schedule_id"])
    return ScheduleDeleted(success=True)


async def _set_enabled(request: Request, enabled: bool) -> ScheduledAgent:
    principal = await principal_of(request)
    uid = request.path_params["schedule_id"]
    async with services_of(request).database.transaction() as conn:
        return await schedules.set_enabled(conn, principal, uid, enabled)


@routes.post(
    ONE + "/pause",
    "Pause a scheduled agent: no slot starts until it is resumed",
    response=ScheduledAgent,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def pause_endpoint(request: Request) -> ScheduledAgent:
    return await _set_enabled(request, False)


@routes.post(
    ONE + "/resume",
    "Resume a scheduled agent from the next slot (missed slots are skipped)",
    response=ScheduledAgent,
    errors=(401, 403, 404),
    problems=USER_ONLY,
)
async def resume_endpoint(request: Request) -> ScheduledAgent:
    return await _set_enabled(request, True)
