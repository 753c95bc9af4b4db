"""POST /factory/{uid}/runs: dispatch a run to the factory's foreman."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.platform.factories import dispatch as factory_dispatch
from gateway.platform.runs.models import RunItem
from gateway.platform.runs.records import run_item


class FactoryRunCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    prompt: Annotated[
        str, Meta(min_length=1, max_length=factory_dispatch.MAX_PROMPT, pattern=r"\S")
    ]
    title: Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")] | None = None
    ticket_ref: (
        Annotated[
            str,
            Meta(
                pattern=f"^{factory_dispatch.TICKET_REF.pattern}$",
                description="for example PROJ-123 or owner/repo#123",
            ),
        ]
        | None
    ) = None
    ticket_url: Annotated[str, Meta(max_length=2000, description="an http or https URL")] | None = (
        None
    )

    def request(self) -> factory_dispatch.DispatchRequest:
        # the URL rule is more than a pattern: parse_ticket_url raises its own 400
        url = factory_dispatch.parse_ticket_url(self.ticket_url)
        return factory_dispatch.DispatchRequest(self.prompt, self.title, self.ticket_ref, url)


routes = Routes("factories")


@routes.post(
    "/factory/{uid}/runs",
    "Dispatch a run to a factory's foreman",
    ok=201,
    response=RunItem,
    errors=(400, 401, 403, 404, 409, 413),
    notes="The factory task bound to the run's conversation is created just after.",
    problems=((409, "`no_foreman`: the factory has no foreman agent"),),
)
async def dispatch_endpoint(request: Request, body: Body[FactoryRunCreate]) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    parsed = (await body.read()).request()
    async with services.database.transaction() as conn:
        row = await factory_dispatch.dispatch_run(conn, factory, parsed, creator=principal)
        item = await run_item(conn, row)
    services.runs_queued.notify()
    # the factory task comes after the response; lookups bind it too if this is lost
    services.spawn(factory_dispatch.bind_pending(services.database), name=f"bind-task-{row.run_id}")
    return json_response(item, 201)
