"""/factory/{uid}/tasks and the task lookups by conversation and by run."""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import (
    json_object,
    json_response,
    query_bool,
    query_choice,
    query_datetime,
    query_limit,
    query_required,
)
from gateway.api.pagination import page_info
from gateway.domain import run_tree, tasks
from gateway.domain.dispatch import ensure_bound
from gateway.domain.factories import Factory, get_accessible_factory
from gateway.domain.identities import Principal
from gateway.domain.runs import can_view, newest_root_run
from gateway.domain.task_listing import TaskQuery, list_tasks
from gateway.errors import Forbidden, NotFound

SORTS = ("created_at", "updated_at")


async def _factory(request: Request) -> tuple[Principal, Factory]:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    return principal, factory


async def create_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    body = await json_object(request)
    async with services_of(request).database.transaction() as conn:
        row = await tasks.create_task(conn, factory, body)
        return json_response(await tasks.task_json(conn, row), 201)


def _task_query(request: Request, after: tuple[datetime, str] | None) -> TaskQuery:
    params = request.query_params
    stages = tuple(tasks.parse_stage(s) for s in params.getlist("stage"))
    return TaskQuery(
        stages=stages,
        created_by=tuple(e for e in params.getlist("created_by") if e),
        q=params.get("q") or None,
        created_after=query_datetime(request, "created_after"),
        created_before=query_datetime(request, "created_before"),
        updated_after=query_datetime(request, "updated_after"),
        sort_by=query_choice(request, "sort_by", SORTS, "created_at"),
        sort_order=query_choice(request, "sort_order", ("asc", "desc"), "desc"),
        limit=query_limit(request),
        after=after,
    )


async def list_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    services = services_of(request)
    sort_by = query_choice(request, "sort_by", SORTS, "created_at")
    sort_order = query_choice(request, "sort_order", ("asc", "desc"), "desc")
    scope = f"tasks:{factory.uid}:{sort_by}:{sort_order}"
    after = services.cursors.decode_keyset(scope, request.query_params.get("cursor"))
    query = _task_query(request, after)
    full = query_bool(request, "full_list")
    current = query_bool(request, "include_current_run")
    await ensure_bound(services.database)
    async with services.database.read() as conn:
        rows, more = await list_tasks(conn, factory.uid, query)
        items = await tasks.tasks_json(conn, rows, full=full, current_run=current)
    cursor = None
    if more:
        last = rows[-1]
        cursor = services.cursors.encode_keyset(scope, getattr(last, sort_by), last.uid)
    return json_response({"tasks": items, "page_info": page_info(cursor)})


async def get_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        row = await tasks.get_task(conn, factory.uid, request.path_params["task_uid"])
        return json_response(await tasks.task_json(conn, row))


async def patch_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    changes = tasks.parse_patch(await json_object(request))
    async with services_of(request).database.transaction() as conn:
        row = await tasks.update_task(conn, factory.uid, request.path_params["task_uid"], changes)
        return json_response(await tasks.task_json(conn, row))


async def delete_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    async with services_of(request).database.transaction() as conn:
        await tasks.delete_task(conn, factory.uid, request.path_params["task_uid"])
    return Response(status_code=204)


async def cancel_endpoint(request: Request) -> Response:
    """404 no current run, 403 current run not visible, 400 ended, 409 PENDING, 422 type."""
    principal, factory = await _factory(request)
    task_uid = request.path_params["task_uid"]
    async with services_of(request).database.transaction() as conn:
        row = await tasks.get_task(conn, factory.uid, task_uid)
        run = await newest_root_run(conn, row.conversation_id)
        if run is None:
            raise NotFound(f"task: {task_uid} has no resolvable current run")
        if not can_view(principal, run):
            raise Forbidden(f"task: the current run of {task_uid} is not accessible to you")
        await run_tree.cancel(conn, run)
        row = await tasks.update_task(conn, factory.uid, task_uid, {"stage": "CANCELLED"})
        return json_response(await tasks.task_json(conn, row, current_run=True))


async def by_conversation_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    conversation_id = query_required(request, "conversation_id")
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        row = await tasks.task_by_conversation(conn, factory.uid, conversation_id)
        return json_response(await tasks.task_json(conn, row))


async def by_run_endpoint(request: Request) -> Response:
    principal, factory = await _factory(request)
    run_id = query_required(request, "run_id")
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        row = await tasks.task_by_run(conn, principal, factory.uid, run_id)
        return json_response(await tasks.task_json(conn, row))


BASE = "/factory/{uid}/tasks"
ONE = BASE + "/{task_uid}"
routes = [
    Route(BASE, create_endpoint, methods=["POST"]),
    Route(BASE, list_endpoint, methods=["GET"]),
    Route(ONE, get_endpoint, methods=["GET"]),
    Route(ONE, patch_endpoint, methods=["PATCH"]),
    Route(ONE, delete_endpoint, methods=["DELETE"]),
    Route(f"{ONE}/cancel", cancel_endpoint, methods=["POST"]),
    Route("/factory/{uid}/task-by-conversation", by_conversation_endpoint, methods=["GET"]),
    Route("/factory/{uid}/task-by-run", by_run_endpoint, methods=["GET"]),
]
