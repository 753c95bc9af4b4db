"""/agent/runs: create, list, get, follow up, cancel, interrupt (CONTRACT 3 wire format)."""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import (
    json_object,
    json_response,
    query_choice,
    query_datetime,
    query_limit,
)
from gateway.api.pagination import page_info
from gateway.domain import conversations, run_tree
from gateway.domain.agent_runs import RunQuery, create_agent_run, list_runs
from gateway.domain.runs import RUN_STATES, one_run_json, runs_json, visible_run
from gateway.errors import InvalidRequest


async def create_run_endpoint(request: Request) -> Response:
    principal = await principal_of(request, team_scoped=True)
    body = await json_object(request)
    async with services_of(request).database.transaction() as conn:
        row = await create_agent_run(conn, principal, body)
    return json_response({"run_id": row.run_id, "task_id": row.run_id, "state": row.state})


def _run_query(request: Request, after: tuple[datetime, str] | None) -> RunQuery:
    params = request.query_params
    states = tuple(params.getlist("state"))
    for state in states:
        if state not in RUN_STATES:
            raise InvalidRequest(f"state: expected one of {', '.join(RUN_STATES)}")
    return RunQuery(
        states=states,
        name=params.get("name") or params.get("config_name") or None,
        model_id=params.get("model_id") or None,
        creator=params.get("creator") or None,
        source=params.get("source") or None,
        q=params.get("q") or None,
        created_after=query_datetime(request, "created_after"),
        created_before=query_datetime(request, "created_before"),
        updated_after=query_datetime(request, "updated_after"),
        sort_by=query_choice(request, "sort_by", ("created_at", "updated_at"), "updated_at"),
        sort_order=query_choice(request, "sort_order", ("asc", "desc"), "desc"),
        limit=query_limit(request),
        after=after,
    )


async def list_runs_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    sort = (
        query_choice(request, "sort_by", ("created_at", "updated_at"), "updated_at"),
        query_choice(request, "sort_order", ("asc", "desc"), "desc"),
    )
    scope = f"runs:{principal.uid}:{sort[0]}:{sort[1]}"
    after = services.cursors.decode_keyset(scope, request.query_params.get("cursor"))
    query = _run_query(request, after)
    async with services.database.read() as conn:
        rows, more = await list_runs(conn, principal, query)
        items = await runs_json(conn, rows)
    cursor = None
    if more:
        last = rows[-1]
        cursor = services.cursors.encode_keyset(scope, getattr(last, query.sort_by), last.run_id)
    return json_response({"runs": items, "page_info": page_info(cursor)})


async def get_run_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await one_run_json(conn, row))


async def followup_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    followup = conversations.parse_followup(await json_object(request))
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await conversations.follow_up(conn, row, followup))


async def cancel_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        await run_tree.cancel(conn, row)
    return json_response(row.run_id)


async def interrupt_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    async with services_of(request).database.transaction() as conn:
        row = await visible_run(conn, principal, request.path_params["run_id"])
        return json_response(await conversations.interrupt(conn, row), 202)


RUN = "/agent/runs/{run_id}"
routes = [
    Route("/agent/runs", create_run_endpoint, methods=["POST"]),
    Route("/agent/runs", list_runs_endpoint, methods=["GET"]),
    Route(RUN, get_run_endpoint, methods=["GET"]),
    Route(f"{RUN}/followups", followup_endpoint, methods=["POST"]),
    Route(f"{RUN}/cancel", cancel_endpoint, methods=["POST"]),
    Route(f"{RUN}/interrupt", interrupt_endpoint, methods=["POST"]),
]
