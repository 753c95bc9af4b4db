"""API routes that declare their operation next to the handler.

    routes = Routes("webhooks")

    @routes.post("/factory/{uid}/webhooks", "Create a webhook", ok=201, response=Webhook)
    async def create(request: Request, body: Body[WebhookCreate]) -> Webhook: ...

The handler's `body: Body[T]` and `query: Query[T]` parameters name the Structs that validate
the request; the same Structs, the path and the declared answers make its OpenAPI operation.
Both are decoded only when the handler asks, so authentication and access checks come first.
A handler returns an instance of the declared `response` type, sent as JSON with the `ok`
status (anything else is a bug, refused at once), or a Response of its own (204, redirects,
text).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, get_args, get_type_hints

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from gateway.foundation.api.decoding import (
    QueryFields,
    decode_body,
    decode_query,
    query_fields,
    read_capped,
    reject_nul,
)
from gateway.foundation.api.http import JSONResponse
from gateway.foundation.openapi import MAX_API_BODY, Documented, Operation

T = TypeVar("T")
Handler = Callable[..., Awaitable[Any]]
H = TypeVar("H", bound=Handler)


class Body(Generic[T]):
    """The JSON body, decoded into T on `await body.read()`."""

    def __init__(
        self,
        request: Request,
        decoder: msgspec.json.Decoder[T],
        required: bool,
        limit: int = MAX_API_BODY,
    ) -> None:
        self._request = request
        self._decoder = decoder
        self._required = required
        self._limit = limit

    async def read(self) -> T:
        raw = await read_capped(self._request, self._limit)
        value: T = decode_body(raw, self._decoder, required=self._required)
        return value


class Query(Generic[T]):
    """The query string, converted into T on `query.read()`."""

    def __init__(self, request: Request, query_type: type[T], names: QueryFields) -> None:
        self._request = request
        self._type = query_type
        self._names = names

    def read(self) -> T:
        value: T = decode_query(self._request.query_params, self._type, self._names)
        return value


class ApiRoute(Route):
    """A route with one method and the operation it documents."""

    def __init__(self, method: str, path: str, handler: Handler, operation: Operation) -> None:
        self.method = method
        self.operation = operation
        self.handler = handler
        super().__init__(
            path, _endpoint(handler, operation), methods=[method], name=handler.__name__
        )


def _endpoint(handler: Handler, operation: Operation) -> Callable[[Request], Awaitable[Response]]:
    body_type, query_type = operation.body, operation.query
    decoder = None if body_type is None else msgspec.json.Decoder(body_type)
    names: QueryFields = () if query_type is None else query_fields(query_type)
    declared = answer_type(operation)
    body_limit = operation.body_limit

    async def endpoint(request: Request) -> Response:
        reject_nul(request)
        inputs: dict[str, Any] = {}
        if decoder is not None:
            inputs["body"] = Body(request, decoder, operation.body_required, body_limit)
        if query_type is not None:
            inputs["query"] = Query(request, query_type, names)
        answer = await handler(request, **inputs)
        if isinstance(answer, Response):
            return answer
        if declared is not None and not isinstance(answer, declared):
            raise TypeError(
                f"{handler.__name__} answered a {type(answer).__name__}, not {declared}"
            )
        return JSONResponse(answer, status_code=operation.ok)

    return endpoint


class Routes(list[BaseRoute]):
    """The routes of one resource module; `tag` groups their operations in the document."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    def get(self, path: str, summary: str, **details: Any) -> Callable[[H], H]:
        return self._add("GET", path, summary, details)

    def post(self, path: str, summary: str, **details: Any) -> Callable[[H], H]:
        return self._add("POST", path, summary, details)

    def put(self, path: str, summary: str, **details: Any) -> Callable[[H], H]:
        return self._add("PUT", path, summary, details)

    def patch(self, path: str, summary: str, **details: Any) -> Callable[[H], H]:
        return self._add("PATCH", path, summary, details)

    def delete(self, path: str, summary: str, **details: Any) -> Callable[[H], H]:
        return self._add("DELETE", path, summary, details)

    def _add(
        self, method: str, path: str, summary: str, details: dict[str, Any]
    ) -> Callable[[H], H]:
        def register(handler: H) -> H:
            hints = get_type_hints(handler)
            details.setdefault("tag", self.tag)
            operation = Operation(
                summary, body=_inner(hints.get("body")), query=_inner(hints.get("query")), **details
            )
            self.append(ApiRoute(method, path, handler, operation))
            return handler

        return register


def answer_type(operation: Operation) -> type | None:
    """The class a handler's JSON answer must be an instance of, when the operation declares one
    (not `Any`, a generic alias or an annotated free-form value)."""
    response = operation.response
    return response if isinstance(response, type) and response is not Any else None


def _inner(hint: Any) -> Any:
    """T of Body[T] or Query[T]; None without the parameter."""
    return None if hint is None else get_args(hint)[0]


def documented(routes: Sequence[BaseRoute], prefix: str = "") -> Iterator[Documented]:
    """(method, path, operation) of every ApiRoute, with the paths of the mounts around it."""
    for route in routes:
        if isinstance(route, Mount):
            yield from documented(route.routes, prefix + route.path)
        elif isinstance(route, ApiRoute):
            yield route.method, prefix + route.path, route.operation
