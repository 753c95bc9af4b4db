"""/factory/{uid}/tasks and the task lookups by conversation and by run."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import Factory, get_accessible_factory
from gateway.accounts.identities import Principal
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Moment, Timestamp, in_utc
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Body, Query, Routes
from gateway.errors import Forbidden, NotFound
from gateway.platform.factories.dispatch import ensure_bound
from gateway.platform.runs import lifecycle as run_lifecycle
from gateway.platform.runs.models import Creator, RunItem
from gateway.platform.runs.records import can_view, newest_root_run
from gateway.platform.tasks import tasks
from gateway.platform.tasks.listing import TaskQuery, list_tasks
from gateway.platform.tasks.tasks import TaskStage

Title = Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")]
Description = Annotated[str, Meta(max_length=100_000)]
FULL_FORM = "full form only (GET one, or a list with full_list)"


class TaskCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    title: Title
    conversation_id: Annotated[str, Meta(min_length=1, max_length=64, pattern=r"\S")]
    stage: Annotated[TaskStage, Meta(description="TRIAGE when absent or null")] | None = None


class TaskPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """At least one field."""

    title: Title | UnsetType = UNSET
    description: Description | UnsetType | None = UNSET
    stage: TaskStage | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.title is UNSET and self.description is UNSET and self.stage is UNSET:
            raise ValueError("body: expected at least one of title, description, stage")


class TaskOutput(Struct):
    id: str
    kind: Annotated[str, Meta(description="for example pull_request")]
    title: str | None
    url: str | None
    created_at: Timestamp


class Task(Struct, kw_only=True):
    """created_by is omitted when the creator is unknown."""

    uid: str
    factory_uid: str
    title: str
    description: str | None
    stage: TaskStage
    conversation_id: str
    created_at: Timestamp
    updated_at: Timestamp
    created_by: Creator | UnsetType = UNSET
    ticket_source: (
        Annotated[
            Literal["repository_issue", "issue_key", "reference"] | None,
            Meta(description=FULL_FORM),
        ]
        | UnsetType
    ) = UNSET
    ticket_id: (
        Annotated[str | None, Meta(description=f"{FULL_FORM}; issue keys upper-cased")] | UnsetType
    ) = UNSET
    outputs: (
        Annotated[list[TaskOutput], Meta(description=f"{FULL_FORM}: derived, newest first")]
        | UnsetType
    ) = UNSET
    current_run: (
        Annotated[
            RunItem | None,
            Meta(
                description="with include_current_run (and from cancel): the conversation's "
                "newest top-level run"
            ),
        ]
        | UnsetType
    ) = UNSET


class TaskList(Struct):
    tasks: list[Task]
    page_info: PageInfo


class TaskFilters(Struct, kw_only=True):
    stage: Annotated[list[TaskStage], Meta(description="any of these stages")] = []
    created_by: Annotated[list[str], Meta(description="creator emails (any case)")] = []
    q: Annotated[str, Meta(description="substring of the title (any case)")] | None = None
    created_after: Moment | None = None
    created_before: Moment | None = None
    updated_after: Moment | None = None
    sort_by: Literal["created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    limit: Limit = 50
    cursor: Cursor | None = None
    full_list: Annotated[bool, Meta(description="add ticket_source, ticket_id and outputs")] = False
    include_current_run: Annotated[bool, Meta(description="add current_run")] = False

    def __post_init__(self) -> None:
        self.created_after = in_utc(self.created_after, "created_after")
        self.created_before = in_utc(self.created_before, "created_before")
        self.updated_after = in_utc(self.updated_after, "updated_after")


class ByConversation(Struct, kw_only=True):
    conversation_id: Annotated[str, Meta(min_length=1)]


class ByRun(Struct, kw_only=True):
    run_id: Annotated[str, Meta(min_length=1, description="any run of the task's run tree")]


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
async def create_endpoint(request: Request, body: Body[TaskCreate]) -> Response:
    _, factory = await _factory(request)
    task = await body.read()
    async with services_of(request).database.transaction() as conn:
        row = await tasks.create_task(
            conn, factory, task.title, task.conversation_id, task.stage or "TRIAGE"
        )
        return json_response(await tasks.task_json(conn, row), 201)


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
    )


@routes.get(BASE, "List tasks", response=TaskList)
async def list_endpoint(request: Request, query: Query[TaskFilters]) -> Response:
    _, factory = await _factory(request)
    services = services_of(request)
    params = query.read()
    scope = f"tasks:{factory.uid}:{params.sort_by}:{params.sort_order}"
    cursors = cursors_of(request)
    task_query = _task_query(params, cursors.decode_keyset(scope, params.cursor))
    await ensure_bound(services.database)
    async with services.database.read() as conn:
        rows, more = await list_tasks(conn, factory.uid, task_query)
        items = await tasks.tasks_json(
            conn, rows, full=params.full_list, current_run=params.include_current_run
        )
    cursor = None
    if more:
        last = rows[-1]
        cursor = cursors.encode_keyset(scope, getattr(last, params.sort_by), last.uid)
    return json_response({"tasks": items, "page_info": page_info(cursor)})


@routes.get(ONE, "Get a task", response=Task)
async def get_endpoint(request: Request) -> Response:
    _, factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        row = await tasks.get_task(conn, factory.uid, request.path_params["task_uid"])
        return json_response(await tasks.task_json(conn, row))


@routes.patch(ONE, "Change a task", response=Task, errors=(400, 401, 403, 404, 413))
async def patch_endpoint(request: Request, body: Body[TaskPatch]) -> Response:
    _, factory = await _factory(request)
    patch = await body.read()
    changes: dict[str, Any] = {
        name: value
        for name, value in (
            ("title", patch.title),
            ("description", patch.description),
            ("stage", patch.stage),
        )
        if value is not UNSET
    }
    async with services_of(request).database.transaction() as conn:
        row = await tasks.update_task(conn, factory.uid, request.path_params["task_uid"], changes)
        return json_response(await tasks.task_json(conn, row))


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
async def cancel_endpoint(request: Request) -> Response:
    principal, factory = await _factory(request)
    task_uid = request.path_params["task_uid"]
    async with services_of(request).database.transaction() as conn:
        row = await tasks.get_task(conn, factory.uid, task_uid)
        run = await newest_root_run(conn, row.conversation_id)
        if run is None:
            raise NotFound(f"task: {task_uid} has no resolvable current run")
        if not can_view(principal, run):
            raise Forbidden(f"task: the current run of {task_uid} is not accessible to you")
        await run_lifecycle.cancel(conn, run)
        row = await tasks.update_task(conn, factory.uid, task_uid, {"stage": "CANCELLED"})
        return json_response(await tasks.task_json(conn, row, current_run=True))


@routes.get("/factory/{uid}/task-by-conversation", "Task bound to a conversation", response=Task)
async def by_conversation_endpoint(request: Request, query: Query[ByConversation]) -> Response:
    _, factory = await _factory(request)
    conversation_id = query.read().conversation_id
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        row = await tasks.task_by_conversation(conn, factory.uid, conversation_id)
        return json_response(await tasks.task_json(conn, row))


@routes.get("/factory/{uid}/task-by-run", "Task of a run's tree", response=Task)
async def by_run_endpoint(request: Request, query: Query[ByRun]) -> Response:
    principal, factory = await _factory(request)
    run_id = query.read().run_id
    await ensure_bound(services_of(request).database)
    async with services_of(request).database.read() as conn:
        row = await tasks.task_by_run(conn, principal, factory.uid, run_id)
        return json_response(await tasks.task_json(conn, row))
