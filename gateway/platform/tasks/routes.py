"""/factory/{uid}/tasks and the task lookups by conversation and by run."""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import Factory, get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.platform.tasks import tasks
from gateway.platform.tasks.binding import ensure_bound
from gateway.platform.tasks.listing import TaskQuery, list_tasks
from gateway.platform.tasks.models import (
    ByConversation,
    ByRun,
    Task,
    TaskCreate,
    TaskFilters,
    TaskList,
    TaskPatch,
)

routes = Routes("tasks")
BASE = "/factory/{uid}/tasks"
ONE = BASE + "/{task_uid}"


async def _factory(request: Request) -> tuple[Principal, Factory]:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    return principal, factory


@routes.post(
    BASE,
    "Create a task",
    ok=201,
    response=Task,
    errors=(400, 401, 403, 404, 409, 413),
    problems=((409, "`conflict`: the conversation is already bound to a live task"),),
)
async def create_endpoint(request: Request, body: Body[TaskCreate]) -> Task:
    _, factory = await _factory(request)
    spec = await body.read()
    async with services_of(request).database.transaction() as conn:
        return await tasks.create_task(conn, factory, spec)


def _task_query(params: TaskFilters, after: tuple[datetime, str] | None) -> TaskQuery:
    return TaskQuery(
        stages=tuple(params.stage),
        created_by=tuple(e for e in params.created_by if e),
        q=params.q or None,
        created_after=params.created_after,
        created_before=params.created_before,
        updated_after=params.updated_after,
        sort_by=params.sort_by,
        sort_order=params.sort_order,
        limit=params.limit,
        after=after,
        full=params.full_list,
        current_run=params.include_current_run,
    )


@routes.get(BASE, "List tasks", response=TaskList)
async def list_endpoint(request: Request, query: Query[TaskFilters]) -> TaskList:
    _, factory = await _factory(request)
    services = services_of(request)
    params = query.read()
    scope = f"tasks:{factory.uid}:{params.sort_by}:{params.sort_order}"
    cursors = cursors_of(request)
    task_query = _task_query(params, cursors.decode_keyset(scope, params.cursor))
    await ensure_bound(services.database)
    async with services.database.read() as conn:
        page, more = await list_tasks(conn, factory.uid, task_query)
    cursor = None
    if more:
        last = page[-1]
        cursor = cursors.encode_keyset(scope, getattr(last, params.sort_by), last.uid)
    return TaskList(page, page_info(cursor))


@routes.get(ONE, "Get a task", response=Task)
async def get_endpoint(request: Request) -> Task:
    _, factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        return await tasks.get_task(conn, factory.uid, request.path_params["task_uid"])


@routes.patch(ONE, "Change a task", response=Task, errors=(400, 401, 403, 404, 413))
async def patch_endpoint(request: Request, body: Body[TaskPatch]) -> Task:
    _, factory = await _factory(request)
    patch = await body.read()
    async with services_of(request).database.transaction() as conn:
        return await tasks.update_task(conn, factory.uid, request.path_params["task_uid"], patch)


@routes.delete(ONE, "Delete a task (soft)", ok=204)
async def delete_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    async with services_of(request).database.transaction() as conn:
        await tasks.delete_task(conn, factory.uid, request.path_params["task_uid"])
    return Response(status_code=204)


@routes.post(
    f"{ONE}/cancel",
    "Cancel the task's current run; the task becomes CANCELLED",
    response=Task,
    errors=(400, 401, 403, 404, 409, 422),
    notes="Answers the task with `current_run`.",
    problems=(
        (400, "`run_terminal`: the current run already ended; or `invalid_request`"),
        (403, "`forbidden`: factory, or the current run, not accessible"),
        (404, "`not_found`: no such task, or it has no current run"),
        (409, "`run_pending`: the current run is PENDING; retry after a moment"),
        (422, "`not_cancellable`: the service cannot stop runs of this type"),
    ),
)
async def cancel_endpoint(request: Request) -> Task:
    principal, factory = await _factory(request)
    async with services_of(request).database.transaction() as conn:
        task_uid = request.path_params["task_uid"]
        return await tasks.cancel_task(conn, principal, factory.uid, task_uid)


@routes.get("/factory/{uid}/task-by-conversation", "Task bound to a conversation", response=Task)
async def by_conversation_endpoint(request: Request, query: Query[ByConversation]) -> Task:
    _, factory = await _factory(request)
    conversation_id = query.read().conversation_id
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        return await tasks.task_by_conversation(conn, factory.uid, conversation_id)


@routes.get("/factory/{uid}/task-by-run", "Task of a run's tree", response=Task)
async def by_run_endpoint(request: Request, query: Query[ByRun]) -> Task:
    principal, factory = await _factory(request)
    run_id = query.read().run_id
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        return await tasks.task_by_run(conn, principal, factory.uid, run_id)
