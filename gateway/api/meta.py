"""Networking egress ranges and the factory definition file schema."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.auth import principal_of, services_of
from gateway.api.http import json_response
from gateway.api.routing import Routes
from gateway.domain.definition_schema import FACTORY_SCHEMA


class EgressRanges(Struct):
    ranges: list[str]
    ipv4: list[str]
    ipv6: list[str]


JsonSchema = Annotated[dict[str, Any], Meta(description="a JSON Schema 2020-12 document")]
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


@routes.get(
    "/factory-files/schemas/v1alpha1/factory.schema.json",
    "JSON Schema of factory definition files",
    tag="factory-files",
    response=JsonSchema,
    media_type="application/schema+json",
    errors=(400, 401),
)
async def factory_schema(request: Request) -> Response:
    await principal_of(request)
    response = json_response(FACTORY_SCHEMA)
    response.headers["content-type"] = "application/schema+json"
    return response
