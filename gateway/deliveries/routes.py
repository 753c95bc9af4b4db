"""GET /factory/{uid}/webhooks/{webhook_uid}/deliveries[/{delivery_id}]: the delivery log."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Timestamp
from gateway.api.http import json_response
from gateway.api.pagination import Page, PageInfo, page_info
from gateway.api.routing import Query, Routes
from gateway.backends.contract import Label
from gateway.deliveries import log as delivery_log
from gateway.rejections import Reason


class DeliveryRun(Struct):
    automation_uid: str
    run_id: str


class ConsideredAutomation(Struct):
    automation_uid: str
    matched: bool
    mismatch: Annotated[
        str | None,
        Meta(
            description="not matched: the first filter condition that failed, e.g. "
            '`$.action: "closed" not in ["opened"]`'
        ),
    ] = None
    path: Annotated[str | None, Meta(description="the JSON path of that condition")] = None
    filter_changed: (
        Annotated[
            bool,
            Meta(
                description="not matched, GET one: the automation changed since the delivery "
                "was evaluated, and the mismatch is explained against its current filter"
            ),
        ]
        | UnsetType
    ) = UNSET


class Trace(Struct):
    outcome: Annotated[
        Literal["matched", "no_match", "no_automations", "webhook_not_live", "no_foreman"],
        Meta(description='what the evaluator decided (docs/ingress.md, "Outcome trace")'),
    ]
    automations: Annotated[
        list[ConsideredAutomation],
        Meta(description="every enabled automation listening to the webhook when evaluated"),
    ]


class Delivery(Struct, kw_only=True):
    delivery_id: str
    received_at: Timestamp
    size: Annotated[int, Meta(ge=0, description="body size in bytes")]
    label: Label
    evaluation: Annotated[
        Literal["pending", "evaluated", "failed"] | None,
        Meta(
            description="accepted deliveries: pending until matched against the automations "
            "(the runs are listed then), failed when matches could start no run; null for the "
            "others"
        ),
    ]
    evaluated_at: Annotated[
        Timestamp | None, Meta(description="when the evaluator matched it (accepted ones)")
    ]
    trace: Annotated[
        Trace | None, Meta(description="why the delivery did or did not start runs (evaluated)")
    ]
    replay_of: Annotated[
        str | None, Meta(description="the delivery this one replays (POST .../replay)")
    ]
    runs: Annotated[list[DeliveryRun], Meta(description="runs started by matching automations")]
    replays: (
        Annotated[list[str], Meta(description="deliveries replaying this one; GET one only")]
        | UnsetType
    ) = UNSET
    reason: Annotated[
        Reason | None,
        Meta(
            description='rejected deliveries: why (docs/ingress.md, "Rejection reasons"); '
            "never sent to the sender. Null for accepted and duplicate ones and for rejections "
            "logged before reasons were recorded"
        ),
    ] = None
    duplicate_of: Annotated[
        str | None, Meta(description="duplicates: the id of the first delivery of this event")
    ] = None
    payload: (
        Annotated[Any, Meta(description="the JSON body; accepted deliveries, on GET one only")]
        | UnsetType
    ) = UNSET
    headers: (
        Annotated[
            dict[str, str] | None,
            Meta(
                description="accepted deliveries, on GET one only: the request headers (names "
                'lower case), credentials and signatures replaced by "[redacted]" '
                "(docs/ingress.md); null for deliveries logged before headers were kept"
            ),
        ]
        | UnsetType
    ) = UNSET


class DeliveryList(Struct):
    deliveries: list[Delivery]
    page_info: PageInfo


routes = Routes("deliveries")
BASE = "/factory/{uid}/webhooks/{webhook_uid}/deliveries"


@routes.get(BASE, "Delivery log, newest first", response=DeliveryList)
async def list_deliveries(request: Request, query: Query[Page]) -> Response:
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
        last = items[-1]
        cursor = cursors.encode_keyset(scope, last["received_at"], last["delivery_id"])
    return json_response({"deliveries": items, "page_info": page_info(cursor)})


@routes.get(BASE + "/{delivery_id}", "One delivery, with its payload", response=Delivery)
async def get_delivery(request: Request) -> Response:
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
        item = await delivery_log.get_delivery(conn, webhook_uid, delivery_id, pending)
    return json_response(item)
