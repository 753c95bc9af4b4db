"""Automation management: /factory/{uid}/automations[/{automation_uid}]."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import factory_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.webhook_gateway.automations import management as domain
from gateway.webhook_gateway.automations.models import (
    Automation,
    AutomationCreate,
    AutomationList,
    AutomationPatch,
)

routes = Routes("automations")
BASE = "/factory/{uid}/automations"
ONE = BASE + "/{automation_uid}"
FILTERS = "An invalid payload filter is a 400 whose detail gives its JSON path."


@routes.post(
    BASE,
    "Create an automation",
    ok=201,
    response=Automation,
    errors=(400, 401, 403, 404, 413),
    notes=FILTERS,
)
async def create(request: Request, body: Body[AutomationCreate]) -> Automation:
    factory = await factory_of(request)
    spec = await body.read()
    async with services_of(request).database.transaction() as conn:
        return await domain.create_automation(conn, factory.uid, spec)


@routes.get(BASE, "List automations", response=AutomationList)
async def list_all(request: Request) -> AutomationList:
    factory = await factory_of(request)
    async with services_of(request).database.read() as conn:
        return AutomationList(await domain.list_automations(conn, factory.uid))


@routes.get(ONE, "Get an automation", response=Automation)
async def get_one(request: Request) -> Automation:
    factory = await factory_of(request)
    async with services_of(request).database.read() as conn:
        uid = request.path_params["automation_uid"]
        return await domain.get_automation(conn, factory.uid, uid)


@routes.patch(
    ONE,
    "Change an automation",
    response=Automation,
    errors=(400, 401, 403, 404, 413),
    notes=FILTERS,
)
async def patch(request: Request, body: Body[AutomationPatch]) -> Automation:
    factory = await factory_of(request)
    changes = await body.read()
    async with services_of(request).database.transaction() as conn:
        uid = request.path_params["automation_uid"]
        return await domain.update_automation(conn, factory.uid, uid, changes)


@routes.delete(ONE, "Delete an automation", ok=204)
async def delete(request: Request) -> Response:
    factory = await factory_of(request)
    async with services_of(request).database.transaction() as conn:
        await domain.delete_automation(conn, factory.uid, request.path_params["automation_uid"])
    return Response(status_code=204)
