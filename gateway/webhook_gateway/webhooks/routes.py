"""Webhook management: /factory/{uid}/webhooks[/{webhook_uid}[/rotate-secret]]."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import factory_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.webhook_gateway.webhooks import management
from gateway.webhook_gateway.webhooks.models import (
    RotatedSecret,
    RotateSecret,
    Webhook,
    WebhookCreate,
    WebhookList,
    WebhookPatch,
)

routes = Routes("webhooks")
BASE = "/factory/{uid}/webhooks"
ONE = BASE + "/{webhook_uid}"


@routes.post(
    BASE,
    "Create a webhook",
    ok=201,
    response=Webhook,
    errors=(400, 401, 403, 404, 409, 413),
    notes="The response carries `secret` once when the service generated it.",
    problems=((409, "`webhook_limit_reached`: the factory already has 20 webhooks"),),
)
async def create(request: Request, body: Body[WebhookCreate]) -> Webhook:
    factory = await factory_of(request)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        return await management.create_webhook(conn, services, factory.uid, factory.team_uid, spec)


@routes.get(BASE, "List live webhooks", response=WebhookList)
async def list_all(request: Request) -> WebhookList:
    factory = await factory_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        return WebhookList(await management.list_webhooks(conn, services, factory.uid))


@routes.get(ONE, "Get a webhook", response=Webhook)
async def get_one(request: Request) -> Webhook:
    factory = await factory_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        uid = request.path_params["webhook_uid"]
        return await management.get_webhook(conn, services, factory.uid, uid)


@routes.patch(
    ONE,
    "Change name, enabled or delivery_id_header",
    response=Webhook,
    errors=(400, 401, 403, 404, 413),
)
async def patch(request: Request, body: Body[WebhookPatch]) -> Webhook:
    factory = await factory_of(request)
    changes = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["webhook_uid"]
        return await management.update_webhook(conn, services, factory.uid, uid, changes)


@routes.delete(ONE, "Delete a webhook (senders get 404)", ok=204)
async def delete(request: Request) -> Response:
    factory = await factory_of(request)
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["webhook_uid"]
        await management.delete_webhook(conn, services, factory.uid, uid)
    return Response(status_code=204)


@routes.post(
    ONE + "/rotate-secret",
    "Rotate the secret; the old one stops at once",
    response=RotatedSecret,
    body_required=False,
    errors=(400, 401, 403, 404, 409, 413),
    notes="Token modes and generated standard_webhooks secrets take no body; other "
    "signature schemes need the provider's new `secret`.",
    problems=((409, "`managed_secret`: the webhook reads a team secret; change that"),),
)
async def rotate(request: Request, body: Body[RotateSecret]) -> RotatedSecret:
    factory = await factory_of(request)
    supplied = (await body.read()).secret
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["webhook_uid"]
        return await management.rotate_secret(conn, services, factory.uid, uid, supplied)
