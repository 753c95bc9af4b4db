"""The console's work item pages: a factory's board (its work items by stage) and one work item
(its source, stage, runs and the deliveries that continued it)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.platform.agent_console import work_item_reads
from gateway.platform.agent_console.html import page
from gateway.webhook_gateway.console import names, session
from gateway.webhook_gateway.console.pages import html_response, signed_in


@signed_in
async def board(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["uid"]
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, uid)
        columns = await work_item_reads.board(conn, uid)
    body = page(
        "work_items.html",
        f"Work items of {factory.name}",
        csrf=session.csrf_token(services.secret_box, request),
        factory=factory,
        columns=columns,
    )
    return html_response(body)


@signed_in
async def work_item(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["uid"]
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, uid)
        view = await work_item_reads.work_item_view(conn, uid, request.path_params["item_id"])
        named = await names.names(conn, [run.automation_uid for run in view.runs])
    body = page(
        "work_item.html",
        f"Work item {view.item.source.ref}",
        csrf=session.csrf_token(services.secret_box, request),
        factory=factory,
        view=view,
        names=named,
    )
    return html_response(body)
