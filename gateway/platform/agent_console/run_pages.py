"""The console's run pages: the runs list (filtered by factory, automation, state, since when)
and one run (state, agent, model, status, duration, transcript tail, artifacts, follow-ups, the
delivery that started it, and a Cancel form). Handlers parse and render; the reads are
run_reads.py, the cancel rule the runs' own."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.foundation.accounts.factories import list_factories
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.platform.agent_console import run_reads
from gateway.platform.agent_console.html import page, render
from gateway.platform.runs.record.cancellation import cancel
from gateway.platform.runs.record.states import RUN_STATES
from gateway.platform.runs.record.store import visible_run
from gateway.webhook_gateway.console import names, session
from gateway.webhook_gateway.console.pages import HEADERS, form_of, html_response, signed_in

P = session.PATH


@signed_in
async def runs(request: Request, services: Services, principal: Principal) -> Response:
    wanted = run_reads.RunFilter.of(dict(request.query_params))
    async with services.database.read() as conn:
        found = await run_reads.list_runs(conn, principal, wanted)
        factories, _more = await list_factories(
            conn, principal, team_uid=None, search=None, limit=100, after=None
        )
        automations = await names.automations_of(conn, [f.uid for f in factories])
        uids = [u for run in found for u in (run.factory_uid, run.automation_uid, run.agent_uid)]
        named = await names.names(conn, [*uids, wanted.automation_uid])
    body = page(
        "runs.html",
        "Runs",
        csrf=session.csrf_token(services.secret_box, request),
        runs=found,
        wanted=wanted,
        factories=factories,
        automations=automations,
        states=RUN_STATES,
        since=tuple(run_reads.SINCE),
        names=named,
    )
    return html_response(body)


async def _view(
    services: Services, principal: Principal, run_id: str
) -> tuple[run_reads.RunView, names.Names]:
    async with services.database.read() as conn:
        view = await run_reads.run_view(conn, principal, run_id)
        run = view.run
        uids = (run.factory_uid, run.automation_uid, run.agent_uid, run.work_item_id)
        named = await names.names(conn, uids)
    return view, named


@signed_in
async def run(request: Request, services: Services, principal: Principal) -> Response:
    view, named = await _view(services, principal, request.path_params["run_id"])
    body = page(
        "run.html",
        view.run.title or f"Run {view.run.run_id}",
        csrf=session.csrf_token(services.secret_box, request),
        view=view,
        names=named,
    )
    return html_response(body)


@signed_in
async def run_live(request: Request, services: Services, principal: Principal) -> Response:
    """The parts of a run's page that change: console.js swaps them in."""
    view, named = await _view(services, principal, request.path_params["run_id"])
    csrf = session.csrf_token(services.secret_box, request)
    return html_response(render("run_live.html", view=view, names=named, csrf=csrf))


@signed_in
async def cancel_run(request: Request, services: Services, principal: Principal) -> Response:
    form = await form_of(request)
    session.check_post(services.secret_box, request, form.get("csrf"))
    run_id = request.path_params["run_id"]
    async with services.database.transaction() as conn:
        await cancel(conn, await visible_run(conn, principal, run_id))
    return RedirectResponse(f"{P}/runs/{run_id}", status_code=303, headers=HEADERS)
