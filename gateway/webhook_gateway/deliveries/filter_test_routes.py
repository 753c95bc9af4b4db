"""Filter backtests: POST /factory/{uid}/webhooks/{webhook_uid}/filter-test, and
POST /factory/{uid}/automations/dry-run (an automation checked against the deliveries its
triggers' webhooks already received, before it is saved)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import AutomationCreate, webhook_uids
from gateway.webhook_gateway.deliveries import backtest as backtests
from gateway.webhook_gateway.deliveries.log import require_webhook
from gateway.webhook_gateway.deliveries.models import (
    DryRun,
    FilterTest,
    FilterTestResult,
    TriggerTest,
)

routes = Routes("deliveries")


@routes.post(
    "/factory/{uid}/webhooks/{webhook_uid}/filter-test",
    "Backtest a payload filter against stored deliveries",
    response=FilterTestResult,
    errors=(400, 401, 403, 404, 413),
    notes="Uses the evaluator's own filter code: what it reports is what live evaluation "
    "decides for the same payload and filter. Window: the newest `last` accepted deliveries, "
    "received at or after `since` when given.",
)
async def filter_test(request: Request, body: Body[FilterTest]) -> FilterTestResult:
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
            filters = backtests.filter_of(webhook_uid, wanted.payload or None)
        window = backtests.Window(wanted.last, wanted.since)
        judge = backtests.judge(backtests.webhook(webhook_uid), filters)
        return await backtests.backtest(conn, webhook_uid, judge, window)


@routes.post(
    "/factory/{uid}/automations/dry-run",
    "Validate an automation and backtest its triggers, without saving it",
    response=DryRun,
    errors=(400, 401, 403, 404, 413),
    notes="Takes the body of POST /factory/{uid}/automations; answers as that would fail (400 "
    "naming the field), else with each trigger's backtest over the newest 50 deliveries of "
    "its webhook (triggers of other providers are checked, not backtested).",
)
async def dry_run(request: Request, body: Body[AutomationCreate]) -> DryRun:
    principal = await principal_of(request)
    services = services_of(request)
    factory_uid = request.path_params["uid"]
    automation = await body.read()
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, factory_uid)
        triggers = await automations.check_triggers(conn, factory_uid, automation.triggers)
        tested = []
        for trigger in triggers:
            for webhook_uid in webhook_uids(trigger):
                filters = backtests.filter_of(webhook_uid, trigger.payload)
                judge = backtests.judge(backtests.webhook(webhook_uid), filters)
                result = await backtests.backtest(conn, webhook_uid, judge, backtests.Window())
                tested.append(
                    TriggerTest(webhook_uid, result.tested, result.matched, result.deliveries)
                )
    return DryRun(True, tested)
