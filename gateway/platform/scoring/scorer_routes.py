"""Scorers of a factory (create, list) and manual scorer dispatch (spec 4.7);
docs/api.md."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.platform.scoring import dispatch as scorer_dispatch
from gateway.platform.scoring import scorers
from gateway.platform.scoring.models import (
    DispatchResults,
    RunSelection,
    Scorer,
    ScorerCreate,
    ScorerList,
    ScorerSelection,
    ScorerUpdate,
)

routes = Routes("scorers")
SCORERS = "/factory/{uid}/scorers"
MANAGE = (403, "`forbidden`: another team's factory, or not a user of its team (manage access)")
INVALID = (400, "`invalid_request`: the selection is invalid; `detail` names the item")


@routes.post(
    SCORERS,
    "Create a scorer",
    ok=201,
    response=Scorer,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
)
async def create_endpoint(request: Request, body: Body[ScorerCreate]) -> Scorer:
    principal = await principal_of(request)
    spec = await body.read()
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await scorers.create_scorer(conn, principal, factory, spec)


@routes.get(SCORERS, "List a factory's scorers", response=ScorerList)
async def list_endpoint(request: Request) -> ScorerList:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return ScorerList(await scorers.list_scorers(conn, factory))


SCORER = SCORERS + "/{scorer_uid}"


@routes.patch(
    SCORER,
    "Update a scorer",
    response=Scorer,
    errors=(400, 401, 403, 404, 413),
    problems=(MANAGE,),
    notes="Partial: at least one field. Each update bumps `version`. `scope_mode` or "
    "`agent_uids` replaces the scope in full. The owning factory cannot change.",
)
async def update_endpoint(request: Request, body: Body[ScorerUpdate]) -> Scorer:
    principal = await principal_of(request)
    # an unknown field, `factory_uid` among them, is a 400 naming it
    changes = await body.read()
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        return await scorers.update_scorer(
            conn, principal, factory, request.path_params["scorer_uid"], changes
        )


@routes.delete(
    SCORER,
    "Delete a scorer",
    ok=204,
    errors=(401, 403, 404),
    problems=(MANAGE,),
    notes="Permanent: the scorer and its scoring jobs go.",
)
async def delete_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        await scorers.delete_scorer(conn, principal, factory, request.path_params["scorer_uid"])
    return Response(status_code=204)


@routes.post(
    "/factory/{factory_uid}/scorers/{scorer_uid}/dispatch",
    "Dispatch one scorer for selected runs",
    response=DispatchResults,
    errors=(400, 401, 403, 404, 413),
    problems=(INVALID, MANAGE),
    notes="Creates a QUEUED scoring job per run; nothing is created when any run is invalid.",
)
async def dispatch_scorer_endpoint(request: Request, body: Body[RunSelection]) -> DispatchResults:
    principal = await principal_of(request)
    run_ids = [str(run_id) for run_id in (await body.read()).run_ids]
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["factory_uid"])
        results = await scorer_dispatch.dispatch_scorer(
            conn, principal, factory, params["scorer_uid"], run_ids
        )
    return DispatchResults(results)


@routes.post(
    "/factory/{factory_uid}/runs/{run_id}/scorer_dispatch",
    "Dispatch selected scorers for one run",
    response=DispatchResults,
    errors=(400, 401, 403, 404, 413),
    problems=(INVALID, MANAGE),
    notes="Creates a QUEUED scoring job per scorer; nothing is created when any is invalid.",
)
async def dispatch_run_endpoint(request: Request, body: Body[ScorerSelection]) -> DispatchResults:
    principal = await principal_of(request)
    scorer_uids = [str(uid) for uid in (await body.read()).scorer_uids]
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["factory_uid"])
        results = await scorer_dispatch.dispatch_run(
            conn, principal, factory, params["run_id"], scorer_uids
        )
    return DispatchResults(results)
