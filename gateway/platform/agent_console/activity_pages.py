"""The console's activity page of a factory: deliveries by outcome and runs by state over the
last hour or day (server-rendered SVG, each with its numbers as a table), and the evaluator's
lag."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.services import Services
from gateway.foundation.store.types import utcnow
from gateway.platform.agent_console import activity
from gateway.platform.agent_console.charts import WINDOWS
from gateway.platform.agent_console.html import page
from gateway.webhook_gateway.console import session
from gateway.webhook_gateway.console.pages import html_response, signed_in


@signed_in
async def factory_activity(request: Request, services: Services, principal: Principal) -> Response:
    uid = request.path_params["uid"]
    window = WINDOWS.get(request.query_params.get("window", ""), WINDOWS["hour"])
    now = utcnow()
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, uid)
        charts = [
            await activity.delivery_chart(conn, uid, window, now),
            await activity.run_chart(conn, uid, window, now),
        ]
    gauges = await services.gauges() if services.gauges is not None else {}
    body = page(
        "activity.html",
        f"Activity of {factory.name}",
        csrf=session.csrf_token(services.secret_box, request),
        factory=factory,
        window=window,
        windows=tuple(WINDOWS),
        charts=charts,
        lag_s=gauges.get("gateway_evaluator_lag_seconds"),
        backlog=gauges.get("gateway_evaluator_backlog"),
    )
    return html_response(body)
