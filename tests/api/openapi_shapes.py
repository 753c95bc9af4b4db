"""The OpenAPI document as a test oracle: `shape_errors` says what is wrong with a real response
as an answer of the documented operation (status, media type, body against the schema, closed
to undocumented fields, timestamps in RFC 3339 UTC)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from gateway.composition.app import openapi_document

BASE_URI = "urn:openapi"  # where the document is registered for $ref resolution
DOCUMENT = openapi_document()


def _closed(value: Any) -> Any:
    """The document with every object schema that lists properties closed to others, so that
    a field the renderer writes but the document does not name fails validation too (for the
    response checks only: the published document leaves responses open to additions)."""
    if isinstance(value, list):
        return [_closed(item) for item in value]
    if not isinstance(value, dict):
        return value
    closed = {key: _closed(item) for key, item in value.items()}
    typed = closed.get("type") == "object" and "properties" in closed
    if typed and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


REGISTRY: Registry[Any] = Registry().with_resource(
    BASE_URI, DRAFT202012.create_resource(_closed(DOCUMENT))
)
FORMATS = FormatChecker(formats=())
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@FORMATS.checks("date-time", raises=ValueError)
def _utc_date_time(value: object) -> bool:
    """Timestamps are RFC 3339 UTC (docs/runs-and-tasks.md)."""
    if not isinstance(value, str):
        return True
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return RFC3339_UTC.fullmatch(value) is not None


def _pointer(*parts: str) -> str:
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def _validator(method: str, path: str, status: int, media_type: str) -> Draft202012Validator:
    where = _pointer("paths", path, method.lower(), "responses", str(status), "content")
    target = {"$ref": f"{BASE_URI}#/{where}/{_pointer(media_type)}/schema"}
    return Draft202012Validator(target, registry=REGISTRY, format_checker=FORMATS)


class AnyResponse(Protocol):
    """An HTTP response (httpx's, or the test client's)."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def json(self) -> Any: ...


def shape_errors(method: str, path: str, response: AnyResponse) -> list[str]:
    """What is wrong with `response` as an answer of the documented operation (empty: fine)."""
    operation = DOCUMENT["paths"][path][method.lower()]
    documented = operation["responses"].get(str(response.status_code))
    if documented is None:
        return [f"status {response.status_code} is not documented"]
    content = documented.get("content")
    if content is None:
        return [] if not response.content else ["a body where none is documented"]
    media_type = response.headers.get("content-type", "").split(";")[0]
    if media_type not in content:
        return [f"media type {media_type!r} is not documented"]
    validator = _validator(method, path, response.status_code, media_type)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in validator.iter_errors(_body(response, media_type))
    ]


def _body(response: AnyResponse, media_type: str) -> Any:
    return response.json() if media_type.endswith("json") else response.content.decode()
