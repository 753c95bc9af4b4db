"""/agent/runs: create, list, get, follow up, cancel, interrupt, in the wire format the official
clients parse (docs/runs-and-tasks.md)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.platform.runs.attachments.files import forget_files, store_files
from gateway.platform.runs.conversations.models import FollowUp, FollowUpResult, InterruptResult
from gateway.platform.runs.conversations.routes import (
    FOLLOW_UP_PROBLEMS,
    NOT_LIVE,
    follow_up,
    interrupt,
)
from gateway.platform.runs.creation.agent_runs import Catalog, create_agent_run, files_of
from gateway.platform.runs.creation.models import RunCreate, RunCreated
from gateway.platform.runs.listing.models import RunFilters, RunList
from gateway.platform.runs.listing.query import list_runs, run_query
from gateway.platform.runs.record.cancellation import cancel
from gateway.platform.runs.record.items import run_item, run_items
from gateway.platform.runs.record.models import RunItem
from gateway.platform.runs.record.store import RUN_ERRORS, visible_run

routes = Routes("runs")
RUN = "/agent/runs/{run_id}"


CREATE = {
    "response": RunCreated,
    "errors": (400, 401, 403, 413),
    "team": True,
    "problems": (
        (403, "`forbidden`: X-Service-Team-Uid is not a team of the caller; or on_behalf_of"),
    ),
}


@routes.post("/agent/runs", "Create a run", **CREATE)
@routes.post(
    "/agent/run",
    "Create a run (the TypeScript client's path)",
    notes="The same operation as POST /agent/runs.",
    **CREATE,
)
async def create_run_endpoint(request: Request, body: Body[RunCreate]) -> RunCreated:
    principal = await principal_of(request, team_scoped=True)
    spec = await body.read()
    services = services_of(request)
    settings = services.settings
    stored = await store_files(services.blobs, files_of(spec, settings.attachments))
    catalog = Catalog(settings.models, settings.environments)
    try:
        async with services.database.transaction() as conn:
            created = await create_agent_run(conn, principal, spec, catalog, stored)
    except BaseException:
        await forget_files(services.blobs, stored)  # the run was not created: nothing holds them
        raise
    services.runs_queued.notify()
    return created


@routes.get("/agent/runs", "List runs", response=RunList, errors=(400, 401))
async def list_runs_endpoint(request: Request, query: Query[RunFilters]) -> RunList:
    principal = await principal_of(request)
    filters = query.read()
    scope = f"runs:{principal.uid}:{filters.sort_by}:{filters.sort_order}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, filters.cursor)
    async with services_of(request).database.read() as conn:
        runs, more = await list_runs(conn, principal, run_query(filters, after))
        items = await run_items(conn, runs)
    cursor = None
    if more:
        last = runs[-1]
        moment = last.created_at if filters.sort_by == "created_at" else last.updated_at
        cursor = cursors.encode_keyset(scope, moment, last.run_id)
    return RunList(items, page_info(cursor))


@routes.get(RUN, "Get a run", response=RunItem, errors=RUN_ERRORS)
async def get_run_endpoint(request: Request) -> RunItem:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        return await run_item(conn, run)


@routes.post(
    f"{RUN}/followups",
    "Send a follow-up",
    response=FollowUpResult,
    errors=(*RUN_ERRORS, 409, 413, 422),
    problems=FOLLOW_UP_PROBLEMS,
)
async def followup_endpoint(request: Request, body: Body[FollowUp]) -> FollowUpResult:
    return await follow_up(request, body)


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
        run = await visible_run(conn, principal, request.path_params["run_id"])
        await cancel(conn, run)
    # the bare id as text: the official client hands the body to its users as is
    return PlainTextResponse(run.run_id)


@routes.post(
    f"{RUN}/interrupt",
    "Interrupt the current turn",
    ok=202,
    response=InterruptResult,
    errors=(*RUN_ERRORS, 409),
    problems=NOT_LIVE,
)
async def interrupt_endpoint(request: Request) -> InterruptResult:
    return await interrupt(request)
