"""Scorers of a factory (create, list) and manual scorer dispatch (spec 4.7);
docs/api.md."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import principal_of, services_of
from gateway.api.decoding import given_fields
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.platform.scoring import dispatch as scorer_dispatch
from gateway.platform.scoring import scorers

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
AgentUid = Annotated[str, Meta(min_length=1, max_length=64)]
Selection = Annotated[list[UUID], Meta(min_length=1, max_length=100)]


class ScorerCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    prompt: Annotated[
        str, Meta(min_length=1, max_length=100_000, pattern=r"\S", description="what to judge")
    ]
    scope_mode: Literal["all_agents", "selected_agents"] = "all_agents"
    agent_uids: (
        Annotated[
            list[AgentUid], Meta(max_length=100, description="with selected_agents: 1 or more")
        ]
        | None
    ) = None
    active: Annotated[bool, Meta(description="scores new runs on its own (not built yet)")] = True
    self_improvement_enabled: bool = False


class ScorerUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only the fields given change; `factory_uid` cannot (a 400 names it)."""

    name: Name | UnsetType = UNSET
    prompt: Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")] | UnsetType = (
        UNSET
    )
    scope_mode: Literal["all_agents", "selected_agents"] | UnsetType = UNSET
    agent_uids: Annotated[list[AgentUid], Meta(max_length=100)] | UnsetType | None = UNSET
    active: bool | UnsetType = UNSET
    self_improvement_enabled: bool | UnsetType = UNSET


class Scorer(Struct, kw_only=True):
    uid: Annotated[str, Meta(description="a UUID")]
    factory_uid: str
    name: str
    prompt: str
    scope_mode: Literal["all_agents", "selected_agents"]
    agent_uids: list[str]
    active: bool
    self_improvement_enabled: bool
    benchmark_managed: Annotated[bool, Meta(description="owned by a benchmark suite")]
    version: int
    created_at: Timestamp
    updated_at: Timestamp


class ScorerList(Struct):
    scorers: list[Scorer]


class RunSelection(Struct, forbid_unknown_fields=True):
    run_ids: Annotated[Selection, Meta(description="1 to 100 distinct, nonzero run ids")]


class ScorerSelection(Struct, forbid_unknown_fields=True):
    scorer_uids: Annotated[Selection, Meta(description="1 to 100 distinct, nonzero scorer uids")]


class DispatchResult(Struct):
    run_id: str
    scorer_uid: str
    job_id: Annotated[str, Meta(description="the queued scoring job")]
    status: Literal["queued", "already_queued"]
    error: Annotated[str | None, Meta(description="why no job was added; null when one was")]


class DispatchResults(Struct):
    results: Annotated[list[DispatchResult], Meta(description="one per pair, in request order")]


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
async def create_endpoint(request: Request, body: Body[ScorerCreate]) -> Response:
    principal = await principal_of(request)
    created = await body.read()
    fields = {f: getattr(created, f) for f in created.__struct_fields__}
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await scorers.create_scorer(conn, principal, factory, fields)
    return json_response(scorers.scorer_json(row), 201)


@routes.get(SCORERS, "List a factory's scorers", response=ScorerList)
async def list_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        rows = await scorers.list_scorers(conn, factory)
    return json_response({"scorers": [scorers.scorer_json(row) for row in rows]})


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
async def update_endpoint(request: Request, body: Body[ScorerUpdate]) -> Response:
    principal = await principal_of(request)
    # an unknown field, `factory_uid` among them, is a 400 naming it
    changes = given_fields(await body.read())
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        row = await scorers.update_scorer(
            conn, principal, factory, request.path_params["scorer_uid"], changes
        )
    return json_response(scorers.scorer_json(row))


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
async def dispatch_scorer_endpoint(request: Request, body: Body[RunSelection]) -> Response:
    principal = await principal_of(request)
    run_ids = [str(run_id) for run_id in (await body.read()).run_ids]
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["factory_uid"])
        results = await scorer_dispatch.dispatch_scorer(
            conn, principal, factory, params["scorer_uid"], run_ids
        )
    return json_response({"results": results})


@routes.post(
    "/factory/{factory_uid}/runs/{run_id}/scorer_dispatch",
    "Dispatch selected scorers for one run",
    response=DispatchResults,
    errors=(400, 401, 403, 404, 413),
    problems=(INVALID, MANAGE),
    notes="Creates a QUEUED scoring job per scorer; nothing is created when any is invalid.",
)
async def dispatch_run_endpoint(request: Request, body: Body[ScorerSelection]) -> Response:
    principal = await principal_of(request)
    scorer_uids = [str(uid) for uid in (await body.read()).scorer_uids]
    params = request.path_params
    async with services_of(request).database.transaction() as conn:
        factory = await get_accessible_factory(conn, principal, params["factory_uid"])
        results = await scorer_dispatch.dispatch_run(
            conn, principal, factory, params["run_id"], scorer_uids
        )
    return json_response({"results": results})
