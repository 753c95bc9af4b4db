"""/factory/{uid}/work-items: what a factory's provider-started runs are about."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import Factory, get_accessible_factory
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Query, Routes
from gateway.platform.work_items.listing import get_work_item, list_work_items
from gateway.platform.work_items.models import WorkItem, WorkItemFilters, WorkItemList

routes = Routes("work items")
BASE = "/factory/{uid}/work-items"


async def _factory(request: Request) -> Factory:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        return await get_accessible_factory(conn, principal, request.path_params["uid"])


@routes.get(
    BASE,
    "List work items",
    response=WorkItemList,
    notes="Newest first; `stage` filters (repeatable).",
)
async def list_endpoint(request: Request, query: Query[WorkItemFilters]) -> WorkItemList:
    factory = await _factory(request)
    params = query.read()
    scope = f"work-items:{factory.uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    async with services_of(request).database.read() as conn:
        page, more = await list_work_items(conn, factory.uid, params.stage, params.limit, after)
    cursor = None
    if more:
        cursor = cursors.encode_keyset(scope, page[-1].created_at, page[-1].id)
    return WorkItemList(page, page_info(cursor))


@routes.get(BASE + "/{id}", "Get a work item", response=WorkItem)
async def get_endpoint(request: Request) -> WorkItem:
    factory = await _factory(request)
    async with services_of(request).database.read() as conn:
        return await get_work_item(conn, factory.uid, request.path_params["id"])
