"""Networking egress ranges."""

from __future__ import annotations

import ipaddress

from msgspec import Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Routes


class EgressRanges(Struct):
    ranges: list[str]
    ipv4: list[str]
    ipv6: list[str]


routes = Routes("networking")


@routes.get(
    "/networking/egress-ranges",
    "Egress IP ranges of hosted agents",
    response=EgressRanges,
    errors=(400, 401, 403),
    team=True,
)
async def egress_ranges(request: Request) -> Response:
    await principal_of(request, team_scoped=True)
    ranges = list(services_of(request).settings.egress_ranges)
    networks = [ipaddress.ip_network(r) for r in ranges]
    return json_response(
        {
            "ranges": ranges,
            "ipv4": [str(n) for n in networks if n.version == 4],
            "ipv6": [str(n) for n in networks if n.version == 6],
        }
    )
