"""The console's pages of a provider connection: its deliveries (live), one delivery (payload,
headers, the trace with the events it was normalized to and why each automation did or did not
start, and its Replay form), and the trigger backtest. Read through the API's own functions,
with the key's access (team scoped, as the API)."""

from __future__ import annotations

import secrets
from functools import partial
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.kernel.errors import InvalidRequest
from gateway.webhook_gateway.automations.source_events import LiveSource
from gateway.webhook_gateway.connections.management import get_connection, visible_row
from gateway.webhook_gateway.console import session
from gateway.webhook_gateway.console.html import page, render
from gateway.webhook_gateway.console.pages import (
    P,
    delivery_context,
    form_of,
    html_response,
    problem_page,
    replay_form,
    signed_in,
)
from gateway.webhook_gateway.deliveries import backtest as backtests
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.models import MAX_WINDOW, Delivery
from gateway.webhook_gateway.deliveries.replay import connection_source

EXAMPLES = {
    "github": {"provider": "github", "event": "issue_labeled", "filter": {"labels": ["agent"]}},
    "gitlab": {"provider": "gitlab", "event": "merge_request", "filter": {"actions": ["open"]}},
    "slack": {"provider": "slack", "event": "app_mention", "filter": {"keywords": ["deploy"]}},
    "linear": {"provider": "linear", "event": "issue_labeled", "filter": {"labels": ["agent"]}},
    "jira": {"provider": "jira", "event": "issue_created", "filter": {"labels": ["agent"]}},
}


async def _connection(services: Services, principal: Principal, uid: str) -> LiveSource:
    async with services.database.read() as conn:
        row = await visible_row(conn, principal, uid)
    return backtests.connection(row)


async def _deliveries(services: Services, uid: str) -> list[Delivery]:
    async with services.database.read() as conn:
        pending = await services.pending_deliveries.of_webhook(uid)
        items, _more = await delivery_log.list_deliveries(conn, uid, 50, None, pending)
    return items


@signed_in
async def connection(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["connection_uid"]
    async with services.database.read() as conn:
        found = await get_connection(conn, services, principal, uid)
    items = await _deliveries(services, uid)
    csrf = session.csrf_token(services.secret_box, request)
    example = orjson.dumps(EXAMPLES.get(found.provider, {})).decode()
    return html_response(
        page(
            "connection.html",
            f"Deliveries of {found.name}",
            csrf=csrf,
            base=f"{P}/p/{uid}",
            items=items,
            connection=found,
            example=example,
        )
    )


@signed_in
async def connection_rows(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["connection_uid"]
    await _connection(services, principal, uid)
    items = await _deliveries(services, uid)
    return html_response(render("delivery_rows.html", base=f"{P}/p/{uid}", items=items))


async def _delivery(
    services: Services, principal: Principal, request: Request
) -> tuple[Delivery, dict[str, Any]]:
    uid, delivery_id = request.path_params["connection_uid"], request.path_params["delivery_id"]
    found = await _connection(services, principal, uid)
    async with services.database.read() as conn:
        pending = await services.pending_deliveries.find(uid, delivery_id)
        explain = partial(backtests.explain, found)
        item = await delivery_log.get_delivery(conn, uid, delivery_id, pending, explain)
        context = await delivery_context(conn, item)
    return item, context


@signed_in
async def delivery_live(request: Request, services: Services, principal: Principal) -> Response:
    """The delivery's evaluation, trace and runs alone: console.js swaps them in."""
    item, context = await _delivery(services, principal, request)
    base = f"{P}/p/{request.path_params['connection_uid']}"
    return html_response(render("delivery_live.html", base=base, item=item, **context))


@signed_in
async def delivery(request: Request, services: Services, principal: Principal) -> Response:
    uid, delivery_id = request.path_params["connection_uid"], request.path_params["delivery_id"]
    item, context = await _delivery(services, principal, request)
    csrf = session.csrf_token(services.secret_box, request)
    body = page(
        "delivery.html",
        f"Delivery {delivery_id}",
        csrf=csrf,
        base=f"{P}/p/{uid}",
        item=item,
        nonce=secrets.token_urlsafe(16),  # keys this form's replay
        replayable=True,
        **context,
    )
    return html_response(body)


@signed_in
async def replay(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["connection_uid"]

    async def allowed() -> None:
        await _connection(services, principal, uid)

    source = connection_source(principal, uid)
    return await replay_form(request, services, principal, source, f"{P}/p/{uid}", allowed)


@signed_in
async def filter_test(request: Request, services: Services, principal: Principal) -> Response:
    form = await form_of(request)
    session.check_post(services.secret_box, request, form.get("csrf"))
    uid = request.path_params["connection_uid"]
    found = await _connection(services, principal, uid)
    csrf = session.csrf_token(services.secret_box, request)
    base = f"{P}/p/{uid}"
    raw_filter = form.get("filter") or "{}"
    try:
        last = min(max(int(form.get("last") or 50), 1), MAX_WINDOW)
        tested = backtests.trigger_to_test(
            found, backtests.checked_trigger(orjson.loads(raw_filter))
        )
    except (orjson.JSONDecodeError, ValueError, InvalidRequest) as exc:
        detail = exc.detail if isinstance(exc, InvalidRequest) else f"trigger: {exc}"
        body = problem_page("Trigger backtest", detail, base, "Back to the deliveries", csrf=csrf)
        return html_response(body, 400)
    async with services.database.read() as conn:
        judge = backtests.judge(found, tested)
        result = await backtests.backtest(conn, found.uid, judge, backtests.Window(last))
    body = page(
        "backtest.html",
        "Trigger backtest",
        csrf=csrf,
        base=base,
        raw_filter=raw_filter,
        last=last,
        result=result,
        subject="trigger",
    )
    return html_response(body)
