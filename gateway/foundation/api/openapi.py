"""GET /api/v1/openapi.json: the OpenAPI 3.1 document of every endpoint (no credentials)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount

from gateway.foundation.api.http import json_response
from gateway.foundation.api.routing import Routes, documented
from gateway.foundation.events.catalogue import body_schemas
from gateway.foundation.openapi import Documented, build_document

API_PREFIX = "/api/v1"


def openapi_routes(served: Sequence[BaseRoute], elsewhere: Sequence[Documented]) -> Routes:
    """The route of the document of `served` (and of itself) plus the operations `elsewhere`
    (those served outside the API's router)."""
    routes = Routes("meta")
    cache: list[dict[str, Any]] = []

    @routes.get("/openapi.json", "This document", response=dict[str, Any], errors=(), public=True)
    async def openapi_json(_request: Request) -> Response:
        if not cache:
            cache.append(document([*served, *routes], elsewhere))
        return json_response(cache[0])

    return routes


def document(routes: Sequence[BaseRoute], elsewhere: Sequence[Documented]) -> dict[str, Any]:
    operations = [*documented([Mount(API_PREFIX, routes=list(routes))]), *elsewhere]
    return build_document(operations, body_schemas())
