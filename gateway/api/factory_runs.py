"""POST /factory/{uid}/runs: dispatch a run to the factory's foreman."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_object, json_response
from gateway.domain import dispatch
from gateway.domain.factories import get_accessible_factory
from gateway.domain.runs import one_run_json


async def dispatch_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    parsed = dispatch.parse_dispatch(await json_object(request))
    async with services.database.transaction() as conn:
        row = await dispatch.dispatch_run(conn, factory, parsed, creator=principal)
        item = await one_run_json(conn, row)
    # the factory task comes after the response; lookups bind it too if this is lost
    services.spawn(dispatch.bind_pending(services.database), name=f"bind-task-{row.run_id}")
    return json_response(item, 201)


routes = [Route("/factory/{uid}/runs", dispatch_endpoint, methods=["POST"])]
