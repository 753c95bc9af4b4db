"""What users read of runners (tag `runs`, in the document beside the run outputs): the usage a
run's runner reported, and the team's runners (self-hosted workers, presence from heartbeats).
docs/runs-and-tasks.md."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.http import json_response
from gateway.foundation.api.routing import Routes
from gateway.platform.runners import usage as run_usage
from gateway.platform.runners.models import RunContext, RunUsage, Workers
from gateway.platform.runners.registry import list_runners
from gateway.platform.runners.waiting import waiting_workers
from gateway.platform.runs.record.store import visible_run

routes = Routes("runs")
RUN = "/agent/runs/{run_id}"


@routes.get(f"{RUN}/usage", "The run's reported usage", response=RunUsage)
async def usage_endpoint(request: Request) -> RunUsage:
    principal = await principal_of(request)
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, request.path_params["run_id"])
        return await run_usage.usage_of(conn, run.run_id)


@routes.get(
    "/agent/workers",
    "Self-hosted workers of the caller's teams",
    response=Workers,
    errors=(400, 401),
    notes="Runners seen within two leases; `online` from their last call (may be a few seconds "
    "stale). `waiting`: the workerHost names factory definitions give that no runner "
    "registered under that worker_id (gateway runner --worker-id) was seen for.",
)
async def workers_endpoint(request: Request) -> Workers:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        seen = await list_runners(conn, principal, services.settings.run_lease_s)
        names = {worker.worker_id for worker in seen if worker.worker_id}
        return Workers(seen, await waiting_workers(conn, principal.team_uids, names))


@routes.get(
    "/runner/context-schema",
    "The JSON Schema of the file RUN_CONTEXT names",
    response=dict[str, Any],
    media_type="application/schema+json",
    errors=(401,),
    notes="What `gateway runner` writes for each run it executes: the run's fields and its "
    "resolved configuration (docs/runners.md#what-the-command-gets).",
)
async def context_schema_endpoint(request: Request) -> Response:
    await principal_of(request)
    response = json_response(context_schema())
    response.headers["content-type"] = "application/schema+json"
    return response


def context_schema() -> dict[str, Any]:
    """RunContext as a JSON Schema 2020-12 document, its definitions under $defs."""
    schema: dict[str, Any] = msgspec.json.schema(RunContext)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
