"""Webhook management: /factory/{uid}/webhooks[/{webhook_uid}[/rotate-secret]]."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_object, json_response, reject_unknown
from gateway.domain import webhooks as domain
from gateway.domain.factories import Factory, get_accessible_factory
from gateway.errors import InvalidRequest

CREATE_FIELDS = {
    "name",
    "auth_mode",
    "signature_scheme",
    "secret",
    "secret_name",
    "delivery_id_header",
    "enabled",
}


async def _factory(request: Request) -> Factory:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await get_accessible_factory(conn, principal, request.path_params["uid"])


async def create(request: Request) -> Response:
    factory = await _factory(request)
    body = await json_object(request)
    reject_unknown(body, CREATE_FIELDS)
    spec = domain.parse_spec(body)
    services = services_of(request)
    async with services.database.transaction() as conn:
        row, generated = await domain.create_webhook(
            conn, services, factory.uid, factory.team_uid, spec
        )
    await services.config_publisher.webhook_changed(row.uid, row.config_version)
    return json_response(domain.webhook_json(services, row, generated), 201)


async def list_all(request: Request) -> Response:
    factory = await _factory(request)
    services = services_of(request)
    async with services.database.read() as conn:
        rows = await domain.list_webhook_rows(conn, factory.uid)
    return json_response({"webhooks": [domain.webhook_json(services, row) for row in rows]})


async def get_one(request: Request) -> Response:
    factory = await _factory(request)
    services = services_of(request)
    async with services.database.read() as conn:
        row = await domain.get_webhook_row(conn, factory.uid, request.path_params["webhook_uid"])
    return json_response(domain.webhook_json(services, row))


async def patch(request: Request) -> Response:
    factory = await _factory(request)
    changes = domain.parse_patch(await json_object(request))
    services = services_of(request)
    async with services.database.transaction() as conn:
        row = await domain.update_webhook(
            conn, factory.uid, request.path_params["webhook_uid"], changes
        )
    await services.config_publisher.webhook_changed(row.uid, row.config_version)
    return json_response(domain.webhook_json(services, row))


async def delete(request: Request) -> Response:
    factory = await _factory(request)
    uid = request.path_params["webhook_uid"]
    services = services_of(request)
    async with services.database.transaction() as conn:
        version = await domain.delete_webhook(conn, factory.uid, uid)
    await services.config_publisher.webhook_changed(uid, version)
    return Response(status_code=204)


async def rotate(request: Request) -> Response:
    factory = await _factory(request)
    body = await json_object(request, allow_empty=True)
    reject_unknown(body, {"secret"})
    supplied = body.get("secret")
    if supplied is not None and (not isinstance(supplied, str) or not supplied):
        raise InvalidRequest("secret: expected a non-empty string")
    services = services_of(request)
    async with services.database.transaction() as conn:
        row, generated = await domain.rotate_secret(
            conn, services, factory.uid, request.path_params["webhook_uid"], supplied
        )
    await services.config_publisher.webhook_changed(row.uid, row.config_version)
    rendered = domain.webhook_json(services, row, generated)
    answer = {"ingress_url": rendered["ingress_url"]}
    if generated is not None:
        answer["secret"] = generated
    return json_response(answer)


routes = [
    Route("/factory/{uid}/webhooks", create, methods=["POST"]),
    Route("/factory/{uid}/webhooks", list_all, methods=["GET"]),
    Route("/factory/{uid}/webhooks/{webhook_uid}", get_one, methods=["GET"]),
    Route("/factory/{uid}/webhooks/{webhook_uid}", patch, methods=["PATCH"]),
    Route("/factory/{uid}/webhooks/{webhook_uid}", delete, methods=["DELETE"]),
    Route("/factory/{uid}/webhooks/{webhook_uid}/rotate-secret", rotate, methods=["POST"]),
]
