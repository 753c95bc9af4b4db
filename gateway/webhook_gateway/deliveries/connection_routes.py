"""A provider connection's delivery log, replays and filter backtests:
GET /provider-connections/{connection_uid}/deliveries[/{delivery_id}],
POST .../deliveries/{delivery_id}/replay, POST .../deliveries/replay, GET .../replays and
POST /provider-connections/{connection_uid}/filter-test (team scoped, as the connection). The
replays are a custom webhook's (replay_routes.py): the same rules, answers and Replayer."""

from __future__ import annotations

from functools import partial

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.http import json_response
from gateway.foundation.api.pagination import Page, PageInfo
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.webhook_gateway.automations.source_events import LiveSource
from gateway.webhook_gateway.connections.management import visible_row
from gateway.webhook_gateway.deliveries import backtest as backtests
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries import replay_bulk as bulk
from gateway.webhook_gateway.deliveries.models import (
    MAX_BULK,
    BulkAnswer,
    BulkReplay,
    Delivery,
    DeliveryList,
    FilterTestResult,
    ProviderFilterTest,
    ReplayAnswer,
    ReplayList,
    ReplayQuery,
)
from gateway.webhook_gateway.deliveries.replay import connection_source
from gateway.webhook_gateway.deliveries.replay_list import list_replays
from gateway.webhook_gateway.deliveries.replay_routes import (
    IDEMPOTENCY_KEY,
    KEY_NOTE,
    key_of,
    replayer_of,
)

routes = Routes("deliveries")
ONE = "/provider-connections/{connection_uid}"
BASE = ONE + "/deliveries"


async def _connection(conn: AsyncConnection, principal: Principal, request: Request) -> LiveSource:
    row = await visible_row(conn, principal, request.path_params["connection_uid"])
    return backtests.connection(row)


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
        window = backtests.Window(wanted.last, wanted.since)
        judge = backtests.judge(connection, tested)
        return await backtests.backtest(conn, connection.uid, judge, window)


@routes.post(
    BASE + "/{delivery_id}/replay",
    "Replay one stored delivery of a provider connection as a new one",
    ok=201,
    response=ReplayAnswer,
    body_required=False,
    headers=(IDEMPOTENCY_KEY,),
    errors=(400, 401, 403, 404, 409, 429, 503),
    team=True,
    notes="The copy, with the request headers stored with the original (they name the "
    "provider's event), is evaluated against today's automations like a live delivery. "
    + KEY_NOTE
    + " A repeated request answers 200.",
    problems=(
        (409, "`connection_disabled`, `not_replayable` (not accepted), `idempotency_key_reused`"),
        (429, "the connection took 60 deliveries in the last 60 seconds"),
    ),
)
async def replay_one(request: Request) -> ReplayAnswer | Response:
    principal = await principal_of(request, team_scoped=True)
    source = connection_source(principal, request.path_params["connection_uid"])
    done = await replayer_of(request).replay(
        source, request.path_params["delivery_id"], key_of(request), principal.uid
    )
    answer = ReplayAnswer(done.delivery_id, done.replay_of)
    return answer if done.created else json_response(answer, 200)


@routes.post(
    BASE + "/replay",
    "Replay the accepted deliveries of a time range of a provider connection",
    response=BulkAnswer,
    headers=(IDEMPOTENCY_KEY,),
    errors=(400, 401, 403, 404, 409, 413, 503),
    team=True,
    notes=f"Oldest first, at most {MAX_BULK} per request. Each replay takes a slot of the "
    "connection's delivery rate; the first refusal stops the request and the rest are "
    "`not_sent`. " + KEY_NOTE,
    problems=((409, "`connection_disabled`"),),
)
async def replay_range(request: Request, body: Body[BulkReplay]) -> BulkAnswer:
    principal = await principal_of(request, team_scoped=True)
    source = connection_source(principal, request.path_params["connection_uid"])
    replayer = replayer_of(request)
    wanted = await body.read()
    return await bulk.replay_range(replayer, source, wanted, key_of(request), principal.uid)


@routes.get(
    ONE + "/replays",
    "Replays of a provider connection's deliveries, newest first, with their progress",
    response=ReplayList,
    team=True,
)
async def replays(request: Request, query: Query[ReplayQuery]) -> ReplayList:
    principal = await principal_of(request, team_scoped=True)
    services = services_of(request)
    limit = query.read().limit
    async with services.database.read() as conn:
        connection = await _connection(conn, principal, request)
        items = await list_replays(conn, connection.uid, limit)
    return ReplayList(items)
