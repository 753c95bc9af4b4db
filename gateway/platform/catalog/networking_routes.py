"""Networking egress ranges."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Routes
from gateway.platform.catalog.models import EgressRanges

routes = Routes("networking")


@routes.get(
    "/networking/egress-ranges",
    "Egress IP ranges of hosted agents",
    response=EgressRanges,
    errors=(400, 401, 403),
    team=True,
)
async def egress_ranges(request: Request) -> EgressRanges:
    await principal_of(request, team_scoped=True)
    return EgressRanges.of(services_of(request).settings.egress_ranges)
