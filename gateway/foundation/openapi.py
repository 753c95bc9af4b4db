"""The OpenAPI 3.1 document, built from operations: each names its path (from the route that
serves it), and declares next to its handler the types of its query, body and answer.

The types are msgspec Structs, the same ones that validate requests, so the document cannot
drift from what the service accepts. Responses are described by Structs too; the API tests check
every real response against them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from gateway.kernel.problem import Problem

Schema = dict[str, Any]
MAX_API_BODY = 1_048_576  # what an API body may hold unless its operation says otherwise
REF = "#/components/schemas/{name}"
ERROR_TEXT = {
    400: "Invalid request (`invalid_request`); `detail` names the offending field",
    401: "Authentication required or failed (`unauthenticated`)",
    403: "Access denied (`forbidden`)",
    404: "Not found or not accessible (`not_found`)",
    408: "Body not received in time (`request_timeout`)",
    409: "Conflict",
    413: "Body too large (`payload_too_large`)",
    415: "Content type not accepted (`unsupported_media_type`)",
    422: "Request cannot be processed",
    429: "Too many requests (`rate_limited`); see Retry-After",
    503: "Temporarily unavailable (`unavailable`); see Retry-After",
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "whole seconds to wait before retrying (at least 1)",
        "schema": {"type": "integer", "minimum": 1},
    }
}


@dataclass(frozen=True)
class Operation:
    """What one (method, path) takes and answers. `response`, `body` and `query` are types that
    msgspec can describe (Structs, or `str`); `problems` says what a status means here."""

    summary: str
    tag: str
    ok: int = 200
    response: Any = None  # None: no body
    media_type: str = "application/json"
    body: Any = None
    body_required: bool = True
    body_limit: int = MAX_API_BODY  # bytes a body may have, read while streaming
    query: Any = None
    errors: tuple[int, ...] = (400, 401, 403, 404)
    problems: tuple[tuple[int, str], ...] = ()
    # a named Problem schema for a status (default: Problem)
    problem_types: tuple[tuple[int, Any], ...] = ()
    notes: str = ""
    team: bool = False  # accepts X-Service-Team-Uid
    public: bool = False  # no bearer authentication
    headers: tuple[Header, ...] = ()  # other request headers it reads
    # other success statuses answering the same shape, and what each means
    also_ok: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Header:
    """An optional request header an operation reads."""

    name: str
    description: str
    max_length: int | None = None


Documented = tuple[str, str, Operation]  # (method, path as served, operation)


def build_document(
    operations: Iterable[Documented], webhooks: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The document of `operations`; `webhooks`: what the service sends out, {"bodies": {name:
    JSON Schema of the request body}, "components": {the schemas they refer to}} (OpenAPI 3.1's
    `webhooks` section)."""
    operations = sorted(operations, key=lambda item: (item[1], item[0]))
    types = [Problem]
    for _, _, op in operations:
        types += [t for t in (op.response, op.body, op.query) if t is not None]
        types += [problem for _, problem in op.problem_types]
    schemas, components = msgspec.json.schema_components(_unique(types), ref_template=REF)
    described = dict(zip(_unique(types), schemas, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for method, path, op in operations:
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, op, described)
    for _, _, op in operations:  # query Structs become parameters, not components
        if op.query is not None:
            components.pop(op.query.__name__, None)
    document = {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {"title": "Agent Run, Factory and Webhook Platform API", "version": "1.0.0"},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    if webhooks is not None:
        components.update(webhooks["components"])
        document["webhooks"] = {
            name: _webhook(name, schema) for name, schema in webhooks["bodies"].items()
        }
    # as JSON data: defaults of tuple fields (`()`) become the lists the served document holds
    plain: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(document))
    return plain


def _webhook(name: str, schema: Schema) -> Schema:
    return {
        "post": {
            "summary": name,
            "description": schema.get("description", "")
            + " Sent signed (Standard Webhooks: webhook-id, webhook-timestamp, "
            "webhook-signature) to each event subscription that selects it.",
            "operationId": "event_" + name.replace(".", "_"),
            "tags": ["event subscriptions"],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": schema}},
            },
            "responses": {
                "2XX": {"description": "delivered (within 15 s)"},
                "410": {"description": "the subscription is disabled"},
                "default": {"description": "tried again later (docs/events.md)"},
            },
        }
    }


def _unique(types: list[Any]) -> list[Any]:
    return list(dict.fromkeys(types))


def _operation(method: str, path: str, op: Operation, described: dict[Any, Schema]) -> Schema:
    operation: Schema = {
        "summary": op.summary,
        "tags": [op.tag],
        "operationId": _operation_id(method, path),
        "parameters": _parameters(path, op, described),
        "responses": _responses(op, described),
    }
    if op.notes:
        operation["description"] = op.notes
    if op.public:
        operation["security"] = []
    if op.body is not None:
        operation["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": described[op.body]}},
            "x-max-bytes": op.body_limit,  # a larger body is a 413 payload_too_large
        }
    return operation


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"[{}]", "", path.removeprefix("/api/v1")).replace("-", "_")
    return method.lower() + "_".join(w for w in words.split("/") if w)


def _parameters(path: str, op: Operation, described: dict[Any, Schema]) -> list[Schema]:
    params: list[Schema] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", path)
    ]
    if op.query is not None:
        params += _query_parameters(op.query)
    if op.team:
        params.append(
            {
                "name": "X-Service-Team-Uid",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "act in this team of the caller's (403 if not one)",
            }
        )
    for header in op.headers:
        schema: Schema = {"type": "string", "minLength": 1}
        if header.max_length is not None:
            schema["maxLength"] = header.max_length
        params.append(
            {
                "name": header.name,
                "in": "header",
                "required": False,
                "schema": schema,
                "description": header.description,
            }
        )
    return params


def _query_parameters(query: Any) -> list[Schema]:
    (_,), components = msgspec.json.schema_components([query], ref_template=REF)
    struct = components[query.__name__]
    params: list[Schema] = []
    for info in msgspec.structs.fields(query):
        schema = _without_null(struct["properties"][info.encode_name])
        param: Schema = {"name": info.encode_name, "in": "query", "required": info.required}
        if "description" in schema:
            param["description"] = schema.pop("description")
        param["schema"] = schema
        if schema.get("type") == "array":
            param |= {"style": "form", "explode": True}
        params.append(param)
    return params


def _without_null(schema: Schema) -> Schema:
    """A query value is never JSON null: `X | None = None` is documented as an optional X."""
    schema = dict(schema)
    options = [o for o in schema.pop("anyOf", ()) if o != {"type": "null"}]
    if len(options) == 1:
        schema = {**options[0], **schema}
    elif options:
        schema["anyOf"] = options
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    return schema


def _responses(op: Operation, described: dict[Any, Schema]) -> Schema:
    ok: Schema = {"description": "Success"}
    if op.response is not None:
        ok["content"] = {op.media_type: {"schema": described[op.response]}}
    responses = {str(op.ok): ok}
    for status, what in op.also_ok:
        responses[str(status)] = ok | {"description": what}
    meaning, named = dict(op.problems), dict(op.problem_types)
    for status in (*op.errors, 500):
        schema = described[named.get(status, Problem)]
        response: Schema = {
            "description": meaning.get(status, ERROR_TEXT.get(status, "Internal server error")),
            "content": {"application/problem+json": {"schema": schema}},
        }
        if status in (429, 503):
            response["headers"] = RETRY_AFTER
        responses[str(status)] = response
    return responses
