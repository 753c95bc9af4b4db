"""Event subscriptions: /event-subscriptions[/{uid}[/rotate-secret]] (team scoped)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.foundation.subscriptions import management
from gateway.foundation.subscriptions.models import (
    EventSubscription,
    RotatedSubscriptionSecret,
    SubscriptionCreate,
    SubscriptionList,
    SubscriptionPatch,
)

routes = Routes("event subscriptions")
BASE = "/event-subscriptions"
ONE = BASE + "/{subscription_uid}"


async def _principal(request: Request) -> Principal:
    return await principal_of(request, team_scoped=True)


@routes.post(
    BASE,
    "Subscribe a URL to events",
    team=True,
    ok=201,
    response=EventSubscription,
    errors=(400, 401, 403, 413),
    notes="For the active team (X-Service-Team-Uid, else the credential's only team); user "
    "credentials. The answer carries `secret` (`whsec_...`) once: messages are signed with it "
    "(Standard Webhooks; docs/events.md). An unknown event type is a 400 naming `events[i]`.",
)
async def create(request: Request, body: Body[SubscriptionCreate]) -> EventSubscription:
    principal = await _principal(request)
    spec = await body.read()
    services = services_of(request)
    async with services.database.transaction() as conn:
        return await management.create_subscription(conn, services.secret_box, principal, spec)


@routes.get(BASE, "List event subscriptions", response=SubscriptionList, team=True)
async def list_all(request: Request) -> SubscriptionList:
    principal = await _principal(request)
    async with services_of(request).database.read() as conn:
        found = await management.list_subscriptions(conn, principal)
    return SubscriptionList(event_subscriptions=found)


@routes.get(
    ONE, "Get an event subscription", response=EventSubscription, errors=(401, 403, 404), team=True
)
async def get_one(request: Request) -> EventSubscription:
    principal = await _principal(request)
    async with services_of(request).database.read() as conn:
        uid = request.path_params["subscription_uid"]
        return EventSubscription.from_row(await management.visible_row(conn, principal, uid))


@routes.patch(
    ONE,
    "Change url, events, description or enabled",
    team=True,
    response=EventSubscription,
    errors=(400, 401, 403, 404, 413),
)
async def patch(request: Request, body: Body[SubscriptionPatch]) -> EventSubscription:
    principal = await _principal(request)
    changes = await body.read()
    async with services_of(request).database.transaction() as conn:
        uid = request.path_params["subscription_uid"]
        return await management.update_subscription(conn, principal, uid, changes)


@routes.delete(ONE, "Delete an event subscription", ok=204, errors=(401, 403, 404), team=True)
async def delete(request: Request) -> Response:
    principal = await _principal(request)
    async with services_of(request).database.transaction() as conn:
        uid = request.path_params["subscription_uid"]
        await management.delete_subscription(conn, principal, uid)
    return Response(status_code=204)


@routes.post(
    ONE + "/rotate-secret",
    "Rotate the signing secret; the old one signs beside it for 24 h",
    team=True,
    response=RotatedSubscriptionSecret,
    body_required=False,
    errors=(401, 403, 404),
)
async def rotate(request: Request) -> RotatedSubscriptionSecret:
    principal = await _principal(request)
    services = services_of(request)
    async with services.database.transaction() as conn:
        uid = request.path_params["subscription_uid"]
        return await management.rotate_secret(conn, services.secret_box, principal, uid)
