"""A provider connection's delivery log and filter backtests:
GET /provider-connections/{connection_uid}/deliveries[/{delivery_id}] and
POST /provider-connections/{connection_uid}/filter-test (team scoped, as the connection)."""

from __future__ import annotations

from functools import partial

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from gateway.accounts.identities import Principal
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.pagination import Page, PageInfo
from gateway.api.routing import Body, Query, Routes
from gateway.connections.management import visible_row
from gateway.deliveries import log as delivery_log
from gateway.deliveries import provider_backtest as backtests
from gateway.deliveries.filter_backtest import Window
from gateway.deliveries.models import (
    Delivery,
    DeliveryList,
    FilterTestResult,
    ProviderFilterTest,
)

routes = Routes("deliveries")
ONE = "/provider-connections/{connection_uid}"
BASE = ONE + "/deliveries"


async def _connection(
    conn: AsyncConnection, principal: Principal, request: Request
) -> backtests.Connection:
    row = await visible_row(conn, principal, request.path_params["connection_uid"])
    return backtests.Connection(row.uid, row.provider, row.team_uid, row.bot)


@routes.get(
    BASE, "A provider connection's delivery log, newest first", response=DeliveryList, team=True
)
async def list_deliveries(request: Request, query: Query[Page]) -> DeliveryList:
    principal = await principal_of(request, team_scoped=True)
    services = services_of(request)
    page = query.read()
    async with services.database.read() as conn:
        connection = await _connection(conn, principal, request)
        scope = f"deliveries:{connection.uid}"
        cursors = cursors_of(request)
        after = cursors.decode_keyset(scope, page.cursor)
        pending = await services.pending_deliveries.of_webhook(connection.uid)
        items, more = await delivery_log.list_deliveries(
            conn, connection.uid, page.limit, after, pending
        )
    cursor = cursors.encode_keyset(scope, *items[-1].position) if more else None
    return DeliveryList(items, PageInfo(cursor is not None, cursor))


@routes.get(
    BASE + "/{delivery_id}",
    "One delivery to a provider connection, with its payload and explained trace",
    response=Delivery,
    team=True,
    notes="The trace lists the trigger events the delivery was normalized to, with their "
    "values, and for each automation considered the trigger that decided and the filter key "
    "its event failed (docs/providers.md, Troubleshooting).",
)
async def get_delivery(request: Request) -> Delivery:
    principal = await principal_of(request, team_scoped=True)
    services = services_of(request)
    delivery_id = request.path_params["delivery_id"]
    async with services.database.read() as conn:
        connection = await _connection(conn, principal, request)
        # looked up before the log: a delivery the evaluator logs meanwhile is then in the log
        pending = await services.pending_deliveries.find(connection.uid, delivery_id)
        return await delivery_log.get_delivery(
            conn, connection.uid, delivery_id, pending, partial(backtests.explain, connection)
        )


@routes.post(
    ONE + "/filter-test",
    "Backtest a provider trigger against a connection's stored deliveries",
    response=FilterTestResult,
    errors=(400, 401, 403, 404, 413),
    team=True,
    notes="`trigger` as an automation writes it, or `automation_uid` (its triggers of this "
    "provider, routed by its factory's repositories as the evaluator does). Each delivery is "
    "normalized again and matched with the evaluator's own code; `path` names the filter key "
    "that failed (`repos`: the factory does not list the repository; `event`: the trigger "
    "listens to none of the delivery's events).",
)
async def filter_test(request: Request, body: Body[ProviderFilterTest]) -> FilterTestResult:
    principal = await principal_of(request, team_scoped=True)
    services = services_of(request)
    wanted = await body.read()
    async with services.database.read() as conn:
        connection = await _connection(conn, principal, request)
        if isinstance(wanted.automation_uid, str):
            tested = await backtests.automation_to_test(conn, connection, wanted.automation_uid)
        else:
            tested = backtests.trigger_to_test(
                connection, backtests.checked_trigger(wanted.trigger)
            )
        window = Window(wanted.last, wanted.since)
        return await backtests.backtest(conn, connection, tested, window)
