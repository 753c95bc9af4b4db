"""Networking egress ranges and the factory definition file schema."""

from __future__ import annotations

import ipaddress

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.domain.definition_schema import FACTORY_SCHEMA


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


async def factory_schema(request: Request) -> Response:
    await principal_of(request)
    response = json_response(FACTORY_SCHEMA)
    response.headers["content-type"] = "application/schema+json"
    return response


routes = [
    Route("/networking/egress-ranges", egress_ranges, methods=["GET"]),
    Route("/factory-files/schemas/v1alpha1/factory.schema.json", factory_schema, methods=["GET"]),
]
