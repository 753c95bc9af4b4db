"""Automation management: /factory/{uid}/automations[/{automation_uid}]."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_object, json_response
from gateway.domain import automations as domain
from gateway.domain.factories import Factory, get_accessible_factory


async def _factory(request: Request) -> Factory:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await get_accessible_factory(conn, principal, request.path_params["uid"])


async def _render(conn: AsyncConnection, rows: list[Row[Any]]) -> list[dict[str, Any]]:
    deleted = await domain.deleted_webhooks(conn, [row.uid for row in rows])
    return [domain.automation_json(row, deleted[row.uid]) for row in rows]


async def create(request: Request) -> Response:
    factory = await _factory(request)
    changes = domain.parse_changes(await json_object(request), creating=True)
    async with services_of(request).database.transaction() as conn:
        row = await domain.create_automation(conn, factory.uid, changes)
        (rendered,) = await _render(conn, [row])
    return json_response(rendered, 201)


async def list_all(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        rows = await domain.list_automation_rows(conn, factory.uid)
        return json_response({"automations": await _render(conn, rows)})


async def get_one(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        row = await domain.get_automation_row(
            conn, factory.uid, request.path_params["automation_uid"]
        )
        (rendered,) = await _render(conn, [row])
    return json_response(rendered)


async def patch(request: Request) -> Response:
    factory = await _factory(request)
    changes = domain.parse_changes(await json_object(request), creating=False)
    async with services_of(request).database.transaction() as conn:
        row = await domain.update_automation(
            conn, factory.uid, request.path_params["automation_uid"], changes
        )
        (rendered,) = await _render(conn, [row])
    return json_response(rendered)


async def delete(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.transaction() as conn:
        await domain.delete_automation(conn, factory.uid, request.path_params["automation_uid"])
    return Response(status_code=204)


routes = [
    Route("/factory/{uid}/automations", create, methods=["POST"]),
    Route("/factory/{uid}/automations", list_all, methods=["GET"]),
    Route("/factory/{uid}/automations/{automation_uid}", get_one, methods=["GET"]),
    Route("/factory/{uid}/automations/{automation_uid}", patch, methods=["PATCH"]),
    Route("/factory/{uid}/automations/{automation_uid}", delete, methods=["DELETE"]),
]
