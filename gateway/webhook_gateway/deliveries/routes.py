"""GET /factory/{uid}/webhooks/{webhook_uid}/deliveries[/{delivery_id}]: the delivery log."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import Page, PageInfo
from gateway.foundation.api.routing import Query, Routes
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.models import Delivery, DeliveryList

routes = Routes("deliveries")
BASE = "/factory/{uid}/webhooks/{webhook_uid}/deliveries"


@routes.get(BASE, "Delivery log, newest first", response=DeliveryList)
async def list_deliveries(request: Request, query: Query[Page]) -> DeliveryList:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    webhook_uid = request.path_params["webhook_uid"]
    page = query.read()
    scope = f"deliveries:{webhook_uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, page.cursor)
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        await delivery_log.require_webhook(conn, factory_uid, webhook_uid)
        pending = await services.pending_deliveries.of_webhook(webhook_uid)
        items, more = await delivery_log.list_deliveries(
            conn, webhook_uid, page.limit, after, pending
        )
    cursor = None
    if more:
        cursor = cursors.encode_keyset(scope, *items[-1].position)
    return DeliveryList(items, PageInfo(cursor is not None, cursor))


@routes.get(BASE + "/{delivery_id}", "One delivery, with its payload", response=Delivery)
async def get_delivery(request: Request) -> Delivery:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    webhook_uid = request.path_params["webhook_uid"]
    delivery_id = request.path_params["delivery_id"]
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        await delivery_log.require_webhook(conn, factory_uid, webhook_uid)
        # looked up before the log: a delivery the evaluator logs meanwhile is then in the log
        pending = await services.pending_deliveries.find(webhook_uid, delivery_id)
        return await delivery_log.get_delivery(conn, webhook_uid, delivery_id, pending)
