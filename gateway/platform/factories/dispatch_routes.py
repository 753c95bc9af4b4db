"""POST /factory/{uid}/runs: dispatch a run to the factory's foreman."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Body, Routes
from gateway.platform.factories import dispatch as factory_dispatch
from gateway.platform.factories.models import FactoryRunCreate
from gateway.platform.runs.record.models import RunItem as Run
from gateway.platform.tasks.binding import bind_pending

routes = Routes("factories")


@routes.post(
    "/factory/{uid}/runs",
    "Dispatch a run to a factory's foreman",
    ok=201,
    response=Run,
    errors=(400, 401, 403, 404, 409, 413),
    notes="The factory task bound to the run's conversation is created just after.",
    problems=((409, "`no_foreman`: the factory has no foreman agent"),),
)
async def dispatch_endpoint(request: Request, body: Body[FactoryRunCreate]) -> Run:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    parsed = (await body.read()).request()
    async with services.database.transaction() as conn:
        run = await factory_dispatch.dispatch_run(conn, factory, parsed, creator=principal)
    services.runs_queued.notify()
    # the factory task comes after the response; lookups bind it too if this is lost
    services.spawn(bind_pending(services.database), name=f"bind-task-{run.run_id}")
    return run
