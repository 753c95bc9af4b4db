"""GET /api/v1/openapi.json: the OpenAPI 3.1 document of every endpoint (no credentials)."""

from __future__ import annotations

from functools import cache
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.api.http import json_response
from gateway.api.openapi_document import build_document


@cache
def _document() -> dict[str, Any]:
    return build_document()


async def openapi_json(_request: Request) -> Response:
    return json_response(_document())


routes = [Route("/openapi.json", openapi_json, methods=["GET"])]
