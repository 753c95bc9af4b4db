"""Liveness and readiness, outside /api/v1 and without credentials, for load balancers and
orchestrators: /healthz answers while the process serves; /readyz checks the store, Redis and
the evaluator's lag (docs/operations.md)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from msgspec import Meta, Struct
from starlette.requests import Request

from gateway.foundation.api.auth import services_of
from gateway.foundation.api.routing import Routes, documented
from gateway.kernel.errors import NotReady


class Alive(Struct):
    status: Literal["ok"]


class Ready(Struct):
    status: Literal["ready"]
    checks: Annotated[dict[str, Literal["ok"]], Meta(description="each check that passed")]


routes = Routes("health")


@routes.get("/healthz", "Liveness", response=Alive, errors=(), public=True)
async def healthz_endpoint(_request: Request) -> Alive:
    return Alive("ok")


@routes.get(
    "/readyz",
    "Readiness",
    response=Ready,
    errors=(503,),
    public=True,
    problems=((503, "`not_ready`: `detail` names each failing check and why"),),
    notes="Checks the store, Redis (when configured) and the evaluator's lag (the oldest "
    "accepted delivery not yet evaluated, at most GATEWAY_READY_MAX_LAG_S seconds old).",
)
async def readyz_endpoint(request: Request) -> Ready:
    probes = services_of(request).probes
    names = list(probes)
    results = await asyncio.gather(*(probes[name]() for name in names))
    failing = [f"{name}: {result}" for name, result in zip(names, results, strict=True) if result]
    if failing:
        raise NotReady("; ".join(failing))
    return Ready("ready", dict.fromkeys(names, "ok"))


OPERATIONS = tuple(documented(routes))
