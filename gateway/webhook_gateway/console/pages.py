"""The console's pages: factories and provider connections, a webhook's deliveries (live), one
delivery (payload, headers, trace, replay) and the filter backtest (a connection's pages:
connection_pages.py). Server-rendered; console.js only refreshes the delivery
rows in place and asks before a replay. Every page reads through the same domain functions as
the API, with the logged-in key's access."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any
from urllib.parse import parse_qs

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from filters import FilterError
from gateway.foundation.accounts.factories import get_accessible_factory, list_factories
from gateway.foundation.accounts.identities import Principal, authenticate
from gateway.foundation.services import Services
from gateway.kernel.errors import ServiceError
from gateway.webhook_gateway.connections.management import list_connections
from gateway.webhook_gateway.console import names, session
from gateway.webhook_gateway.console.html import page, render
from gateway.webhook_gateway.deliveries import backtest as backtests
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.models import MAX_WINDOW, Delivery
from gateway.webhook_gateway.deliveries.replay import Replayer, Source, webhook_source
from gateway.webhook_gateway.webhooks.management import get_webhook_row, list_webhooks

P = session.PATH
MAX_FORM_BYTES = 64 * 1024
Page = Callable[[Request, Services, Principal], Awaitable[Response]]
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
}


def _services(request: Request) -> Services:
    services: Services = request.state.services
    return services


def html_response(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=HEADERS)


def _problem(title: str, detail: str, status: int, signed_in: bool = True) -> HTMLResponse:
    body = problem_page(title, detail, P, "Back to the console", signed_in=signed_in)
    return html_response(body, status)


def problem_page(
    title: str, detail: str, back: str, back_text: str, *, signed_in: bool = True, csrf: str = ""
) -> str:
    """`detail` above a link to `back`."""
    return page(
        "problem.html",
        title,
        signed_in=signed_in,
        csrf=csrf,
        detail=detail,
        back=back,
        back_text=back_text,
    )


def signed_in(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """Runs `handler` for a logged-in user; sends others to the login page, and renders the
    service's errors as pages."""

    @wraps(handler)
    async def endpoint(request: Request) -> Response:
        services = _services(request)
        try:
            session.check_transport(request)
            principal = await session.principal_of(request, services)
            return await handler(request, services, principal)
        except session.NotLoggedIn:
            return RedirectResponse(f"{P}/login", status_code=303, headers=HEADERS)
        except session.Refused as exc:
            return _problem("Refused", str(exc), 403)
        except ServiceError as exc:
            return _problem(exc.title, exc.detail, exc.status)

    return endpoint


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form (the console's only kind), capped at MAX_FORM_BYTES."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise session.Refused("form too large")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


async def login_form(request: Request) -> Response:
    return html_response(_login_page(""))


def _login_page(problem: str) -> str:
    return page("login.html", "Log in", signed_in=False, problem=problem)


async def login(request: Request) -> Response:
    services = _services(request)
    try:
        session.check_transport(request)
        session.check_post(services.secret_box, request, None, token=False)
        key = (await form_of(request)).get("api_key", "").strip()
    except session.Refused as exc:
        return _problem("Refused", str(exc), 403, signed_in=False)
    async with services.database.read() as conn:
        principal = await authenticate(conn, key) if key else None
    if principal is None:
        return html_response(_login_page("Unknown or revoked API key."), 401)
    response = RedirectResponse(P, status_code=303, headers=HEADERS)
    await session.open_session(services, response, key, session.is_secure(request))
    return response


@signed_in
async def logout(request: Request, services: Services, principal: Principal) -> Response:
    session.check_post(services.secret_box, request, (await form_of(request)).get("csrf"))
    response = RedirectResponse(f"{P}/login", status_code=303, headers=HEADERS)
    await session.close_session(services, request, response, session.is_secure(request))
    return response


@signed_in
async def home(request: Request, services: Services, principal: Principal) -> Response:
    async with services.database.read() as conn:
        found, _more = await list_factories(
            conn, principal, team_uid=None, search=None, limit=100, after=None
        )
        connections = await list_connections(conn, services, principal)
    csrf = session.csrf_token(services.secret_box, request)
    body = page("factories.html", "Factories", csrf=csrf, factories=found, connections=connections)
    return html_response(body)


@signed_in
async def factory(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["uid"]
    async with services.database.read() as conn:
        found = await get_accessible_factory(conn, principal, uid)
        hooks = await list_webhooks(conn, services, uid)
        automations = await names.factory_automations(conn, uid)
    csrf = session.csrf_token(services.secret_box, request)
    body = page(
        "webhooks.html",
        f"Factory {found.name}",
        csrf=csrf,
        factory_uid=uid,
        hooks=hooks,
        automations=automations,
    )
    return html_response(body)


async def _deliveries(
    services: Services, principal: Principal, uid: str, webhook_uid: str
) -> tuple[str, list[Delivery]]:
    """The webhook's name and its newest 50 deliveries."""
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, uid)
        hook = await get_webhook_row(conn, uid, webhook_uid)
        pending = await services.pending_deliveries.of_webhook(webhook_uid)
        items, _more = await delivery_log.list_deliveries(conn, webhook_uid, 50, None, pending)
    return str(hook.name), items


@signed_in
async def webhook(request: Request, services: Services, principal: Principal) -> Response:
    uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]
    name, items = await _deliveries(services, principal, uid, webhook_uid)
    csrf = session.csrf_token(services.secret_box, request)
    base = f"{P}/f/{uid}/w/{webhook_uid}"
    title = f"Deliveries of {name}"
    return html_response(page("webhook.html", title, csrf=csrf, base=base, items=items))


@signed_in
async def webhook_rows(request: Request, services: Services, principal: Principal) -> Response:
    """The rows of the deliveries table alone: console.js swaps them in every few seconds."""
    uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]
    _name, items = await _deliveries(services, principal, uid, webhook_uid)
    return html_response(
        render("delivery_rows.html", base=f"{P}/f/{uid}/w/{webhook_uid}", items=items)
    )


@signed_in
async def delivery(request: Request, services: Services, principal: Principal) -> Response:
    base, item, context = await _webhook_delivery(services, principal, request)
    csrf = session.csrf_token(services.secret_box, request)
    nonce = secrets.token_urlsafe(16)  # keys this form's replay (see `replay`)
    body = page(
        "delivery.html",
        f"Delivery {item.delivery_id}",
        csrf=csrf,
        base=base,
        item=item,
        nonce=nonce,
        replayable=True,
        **context,
    )
    return html_response(body)


async def delivery_context(conn: AsyncConnection, item: Delivery) -> dict[str, Any]:
    """What a delivery's page prints beside the delivery: names of the automations and
    factories of its trace and runs, and its runs' states."""
    uids: list[str | None] = [run.automation_uid for run in item.runs]
    if item.trace:
        for entry in item.trace.automations:
            factory_uid = entry.factory_uid  # UNSET in a webhook's trace
            uids += [entry.automation_uid, factory_uid if isinstance(factory_uid, str) else None]
    run_ids = [run.run_id for run in item.runs] + [f.run_id for f in item.follow_ups]
    facts = await names.run_facts(conn, run_ids)
    uids += [f.work_item_id for f in facts.values()]
    # nothing will change any more: console.js stops refreshing
    final = item.evaluation != "pending" and all(f.state in names.ENDED for f in facts.values())
    return {"names": await names.names(conn, uids), "run_facts": facts, "final": final}


async def _webhook_delivery(
    services: Services, principal: Principal, request: Request
) -> tuple[str, Delivery, dict[str, Any]]:
    uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]
    delivery_id = request.path_params["delivery_id"]
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, uid)
        await delivery_log.require_webhook(conn, uid, webhook_uid)
        found = await services.pending_deliveries.find(webhook_uid, delivery_id)
        item = await delivery_log.get_delivery(conn, webhook_uid, delivery_id, found)
        context = await delivery_context(conn, item)
    return f"{P}/f/{uid}/w/{webhook_uid}", item, context


@signed_in
async def delivery_live(request: Request, services: Services, principal: Principal) -> Response:
    """The delivery's evaluation, trace and runs alone: console.js swaps them in."""
    base, item, context = await _webhook_delivery(services, principal, request)
    return html_response(render("delivery_live.html", base=base, item=item, **context))


@signed_in
async def replay(request: Request, services: Services, principal: Principal) -> Response:
    uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]

    async def allowed() -> None:
        async with services.database.read() as conn:
            await get_accessible_factory(conn, principal, uid)

    source = webhook_source(uid, webhook_uid)
    base = f"{P}/f/{uid}/w/{webhook_uid}"
    return await replay_form(request, services, principal, source, base, allowed)


async def replay_form(
    request: Request,
    services: Services,
    principal: Principal,
    source: Source,
    base: str,
    allowed: Callable[[], Awaitable[None]] | None = None,
) -> Response:
    """A delivery page's Replay form (a custom webhook's or a provider connection's): replays
    and shows the copy. `allowed` refuses a caller without access, after the form's checks."""
    form = await form_of(request)
    session.check_post(services.secret_box, request, form.get("csrf"))
    # the form's nonce keys the replay: sending the same form twice replays once
    nonce = form.get("nonce", "")
    key = f"console:{nonce}" if 0 < len(nonce) <= 64 else None
    if allowed is not None:
        await allowed()
    if services.delivery_backend is None:
        return _problem("Unavailable", "this process serves no ingress backend", 503)
    replayer = Replayer(services.database, services.delivery_backend, services.pending_deliveries)
    done = await replayer.replay(source, request.path_params["delivery_id"], key, principal.uid)
    return RedirectResponse(f"{base}/d/{done.delivery_id}", status_code=303, headers=HEADERS)


@signed_in
async def filter_test(request: Request, services: Services, principal: Principal) -> Response:
    form = await form_of(request)
    session.check_post(services.secret_box, request, form.get("csrf"))
    uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]
    csrf = session.csrf_token(services.secret_box, request)
    base = f"{P}/f/{uid}/w/{webhook_uid}"
    try:
        raw = orjson.loads(form.get("filter") or "{}")
        filters = backtests.filter_of(webhook_uid, raw)
        last = min(max(int(form.get("last") or 50), 1), MAX_WINDOW)
    except (orjson.JSONDecodeError, FilterError, ValueError) as exc:
        detail = f"filter: {exc}"
        body = problem_page("Filter backtest", detail, base, "Back to the deliveries", csrf=csrf)
        return html_response(body, 400)
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, uid)
        await delivery_log.require_webhook(conn, uid, webhook_uid)
        judge = backtests.judge(backtests.webhook(webhook_uid), filters)
        result = await backtests.backtest(conn, webhook_uid, judge, backtests.Window(last))
    raw_filter = form.get("filter") or "{}"
    body = page(
        "backtest.html",
        "Filter backtest",
        csrf=csrf,
        base=base,
        raw_filter=raw_filter,
        last=last,
        result=result,
        subject="payload filter",
    )
    return html_response(body)
