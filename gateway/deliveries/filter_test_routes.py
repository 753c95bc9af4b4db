"""Filter backtests: POST /factory/{uid}/webhooks/{webhook_uid}/filter-test, and
POST /factory/{uid}/automations/dry-run (an automation checked against the deliveries its
triggers' webhooks already received, before it is saved)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Moment, Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Routes
from gateway.automations import management as automations
from gateway.automations.routes import AutomationCreate
from gateway.deliveries import filter_backtest as backtests
from gateway.deliveries.log import require_webhook

routes = Routes("deliveries")
Last = Annotated[
    int, Meta(ge=1, le=backtests.MAX_WINDOW, description="the newest this many deliveries")
]


class FilterTest(Struct, kw_only=True, forbid_unknown_fields=True):
    """Exactly one of `payload` (a payload filter) and `automation_uid`."""

    payload: (
        Annotated[dict[str, Any], Meta(description="a payload filter (docs/filters.md)")]
        | UnsetType
    ) = UNSET
    automation_uid: str | UnsetType = UNSET
    last: Last = 50
    since: Moment | None = None

    def __post_init__(self) -> None:
        if (self.payload is UNSET) == (self.automation_uid is UNSET):
            raise ValueError("payload: give either payload or automation_uid")
        if self.payload is not UNSET and (fault := automations.filter_fault(self.payload)):
            raise ValueError(f"payload: {fault}")


class TestedDelivery(Struct):
    delivery_id: str
    received_at: Timestamp
    matched: bool
    mismatch: Annotated[
        str | None, Meta(description="not matched: the first filter condition that failed")
    ]
    path: Annotated[str | None, Meta(description="the JSON path of that condition")]


class FilterTestResult(Struct):
    tested: int
    matched: int
    deliveries: Annotated[list[TestedDelivery], Meta(description="newest first")]


class TriggerTest(Struct):
    webhook_uid: str
    tested: int
    matched: int
    deliveries: list[TestedDelivery]


class DryRun(Struct):
    valid: Annotated[bool, Meta(description="the automation would be saved as sent")]
    triggers: Annotated[list[TriggerTest], Meta(description="one per trigger, in order")]


@routes.post(
    "/factory/{uid}/webhooks/{webhook_uid}/filter-test",
    "Backtest a payload filter against stored deliveries",
    response=FilterTestResult,
    errors=(400, 401, 403, 404, 413),
    notes="Uses the evaluator's own filter code: what it reports is what live evaluation "
    "decides for the same payload and filter. Window: the newest `last` accepted deliveries, "
    "received at or after `since` when given.",
)
async def filter_test(request: Request, body: Body[FilterTest]) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    webhook_uid = request.path_params["webhook_uid"]
    wanted = await body.read()
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        await require_webhook(conn, factory_uid, webhook_uid)
        if isinstance(wanted.automation_uid, str):
            filters = await backtests.automation_filters(
                conn, factory_uid, wanted.automation_uid, webhook_uid
            )
        else:
            filters = backtests.filter_of(wanted.payload or None)
        window = backtests.Window(wanted.last, wanted.since)
        result = await backtests.backtest(conn, webhook_uid, filters, window)
    return json_response(result)


@routes.post(
    "/factory/{uid}/automations/dry-run",
    "Validate an automation and backtest its triggers, without saving it",
    response=DryRun,
    errors=(400, 401, 403, 404, 413),
    notes="Takes the body of POST /factory/{uid}/automations; answers as that would fail (400 "
    "naming the field), else with each trigger's backtest over the newest 50 deliveries of "
    "its webhook.",
)
async def dry_run(request: Request, body: Body[AutomationCreate]) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    automation = await body.read()
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        triggers = [
            automations.Trigger(trigger.filter.webhook_ids[0], _payload(trigger.filter.payload))
            for trigger in automation.triggers
        ]
        await automations.check_webhooks(conn, factory_uid, triggers)
        tested = []
        for trigger in triggers:
            filters = backtests.filter_of(trigger.payload)
            result = await backtests.backtest(
                conn, trigger.webhook_uid, filters, backtests.Window()
            )
            tested.append({"webhook_uid": trigger.webhook_uid, **result})
    return json_response({"valid": True, "triggers": tested})


def _payload(value: dict[str, Any] | UnsetType | None) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None
