"""Automation management: /factory/{uid}/automations[/{automation_uid}]."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import Factory, get_accessible_factory
from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.automations import management as domain

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Prompt = Annotated[str, Meta(min_length=1, max_length=domain.MAX_PROMPT, pattern=r"\S")]


class TriggerFilter(Struct, kw_only=True, forbid_unknown_fields=True):
    webhook_ids: Annotated[
        list[str],
        Meta(
            min_length=1,
            max_length=1,
            description="exactly one webhook of this factory (add one trigger per webhook)",
        ),
    ]
    payload: (
        Annotated[
            dict[str, Any],
            Meta(description="payload filter (docs/filters.md); absent or {} matches all"),
        ]
        | UnsetType
        | None
    ) = UNSET

    def __post_init__(self) -> None:
        if self.payload and (fault := domain.filter_fault(self.payload)):
            raise ValueError(f"payload: {fault}")


class Trigger(Struct, kw_only=True, forbid_unknown_fields=True):
    provider: Literal["webhook"]
    event: Literal["received"]
    filter: TriggerFilter


Triggers = Annotated[list[Trigger], Meta(min_length=1, max_length=domain.MAX_TRIGGERS)]


class AutomationCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    prompt: Prompt
    enabled: bool = True
    triggers: Triggers


class AutomationPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    prompt: Prompt | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    triggers: Triggers | UnsetType = UNSET


class Automation(Struct, kw_only=True):
    uid: str
    factory_uid: str
    name: str
    prompt: str
    enabled: bool
    triggers: list[Trigger]
    webhooks_deleted: Annotated[
        list[str], Meta(description="trigger webhooks since deleted (those triggers never fire)")
    ]
    created_at: Timestamp
    updated_at: Timestamp


class AutomationList(Struct):
    automations: list[Automation]


def _changes(body: AutomationCreate | AutomationPatch) -> dict[str, Any]:
    """Column values: the set fields, the name stripped, triggers as JSON (as they were sent)."""
    changes: dict[str, Any] = msgspec.to_builtins(body)
    if "name" in changes:
        changes["name"] = changes["name"].strip()
    return changes


routes = Routes("automations")
BASE = "/factory/{uid}/automations"
ONE = BASE + "/{automation_uid}"
FILTERS = "An invalid payload filter is a 400 whose detail gives its JSON path."


async def _factory(request: Request) -> Factory:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await get_accessible_factory(conn, principal, request.path_params["uid"])


async def _render(conn: AsyncConnection, rows: list[Row[Any]]) -> list[dict[str, Any]]:
    deleted = await domain.deleted_webhooks(conn, [row.uid for row in rows])
    return [domain.automation_json(row, deleted[row.uid]) for row in rows]


@routes.post(
    BASE,
    "Create an automation",
    ok=201,
    response=Automation,
    errors=(400, 401, 403, 404, 413),
    notes=FILTERS,
)
async def create(request: Request, body: Body[AutomationCreate]) -> Response:
    factory = await _factory(request)
    changes = _changes(await body.read())
    async with services_of(request).database.transaction() as conn:
        row = await domain.create_automation(conn, factory.uid, changes)
        (rendered,) = await _render(conn, [row])
    return json_response(rendered, 201)


@routes.get(BASE, "List automations", response=AutomationList)
async def list_all(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        rows = await domain.list_automation_rows(conn, factory.uid)
        return json_response({"automations": await _render(conn, rows)})


@routes.get(ONE, "Get an automation", response=Automation)
async def get_one(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        row = await domain.get_automation_row(
            conn, factory.uid, request.path_params["automation_uid"]
        )
        (rendered,) = await _render(conn, [row])
    return json_response(rendered)


@routes.patch(
    ONE,
    "Change an automation",
    response=Automation,
    errors=(400, 401, 403, 404, 413),
    notes=FILTERS,
)
async def patch(request: Request, body: Body[AutomationPatch]) -> Response:
    factory = await _factory(request)
    changes = _changes(await body.read())
    async with services_of(request).database.transaction() as conn:
        row = await domain.update_automation(
            conn, factory.uid, request.path_params["automation_uid"], changes
        )
        (rendered,) = await _render(conn, [row])
    return json_response(rendered)


@routes.delete(ONE, "Delete an automation", ok=204)
async def delete(request: Request) -> Response:
    factory = await _factory(request)
    async with services_of(request).database.transaction() as conn:
        await domain.delete_automation(conn, factory.uid, request.path_params["automation_uid"])
    return Response(status_code=204)
