"""GET /factory/{uid}/webhooks/{webhook_uid}/deliveries[/{delivery_id}]: the delivery log."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response, query_limit
from gateway.api.pagination import page_info
from gateway.domain import deliveries
from gateway.domain.factories import get_accessible_factory


async def list_deliveries(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    webhook_uid = request.path_params["webhook_uid"]
    limit = query_limit(request)
    scope = f"deliveries:{webhook_uid}"
    after = services.cursors.decode_keyset(scope, request.query_params.get("cursor"))
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        await deliveries.require_webhook(conn, factory_uid, webhook_uid)
        pending = await services.pending_deliveries.of_webhook(webhook_uid)
        items, more = await deliveries.list_deliveries(conn, webhook_uid, limit, after, pending)
    cursor = None
    if more:
        last = items[-1]
        cursor = services.cursors.encode_keyset(scope, last["received_at"], last["delivery_id"])
    return json_response({"deliveries": items, "page_info": page_info(cursor)})


async def get_delivery(request: Request) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    webhook_uid = request.path_params["webhook_uid"]
    delivery_id = request.path_params["delivery_id"]
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        await deliveries.require_webhook(conn, factory_uid, webhook_uid)
        # looked up before the log: a delivery the evaluator logs meanwhile is then in the log
        pending = await services.pending_deliveries.find(webhook_uid, delivery_id)
        item = await deliveries.get_delivery(conn, webhook_uid, delivery_id, pending)
    return json_response(item)


_BASE = "/factory/{uid}/webhooks/{webhook_uid}/deliveries"
routes: list[BaseRoute] = [
    Route(_BASE, list_deliveries, methods=["GET"]),
    Route(_BASE + "/{delivery_id}", get_delivery, methods=["GET"]),
]
