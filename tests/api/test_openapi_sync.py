"""The OpenAPI document and the app agree: every served (method, path) is documented and back,
and every handler answers the type its operation declares. The document's schemas are the
Structs that validate requests and encode responses (gateway/foundation/api/routing.py refuses a
handler answering another type), so a structural check is the whole sync: no response can carry a
field the document does not name, or miss one it does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import httpx
import msgspec
import pytest
from jsonschema import Draft202012Validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.testclient import TestClient

from gateway.composition.app import create_app, openapi_document
from gateway.foundation.api.routing import ApiRoute, Routes, answer_type
from gateway.webhook_gateway.console.session import PATH as CONSOLE_PATH
from gateway.webhook_gateway.ingress.endpoint import INGRESS_PREFIX, PROVIDER_PREFIX
from tests.api.openapi_shapes import shape_errors
from tests.conftest import make_settings
from tests.support import GatewayClient

METHODS = {"get", "post", "put", "patch", "delete"}


def _walk(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    for route in routes:
        if isinstance(route, Mount) and route.path == CONSOLE_PATH:
            continue  # HTML pages for browsers (docs/console.md), not operations of the API
        if isinstance(route, Mount):
            yield from _walk(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            assert isinstance(route, ApiRoute), f"{route.path}: a route without an operation"
            for method in route.methods or ():
                if method.lower() in METHODS:  # HEAD is implied by GET
                    yield method.upper(), prefix + route.path


def served(tmp_path: Path) -> set[tuple[str, str]]:
    app: Any = create_app(make_settings(f"sqlite:///{tmp_path}/gw.db"))  # never started
    assert app.ingress is not None  # role "all": the dispatcher sends /webhooks/w/ to ingress
    pairs = set(_walk(app.api.routes))
    # The ingress is one raw ASGI endpoint behind path prefixes, not a router: its shapes
    ingress = INGRESS_PREFIX + "{webhook_uid}"
    connection = PROVIDER_PREFIX + "{connection_uid}"
    return pairs | {("POST", ingress), ("POST", ingress + "/{token}"), ("POST", connection)}


def documented() -> set[tuple[str, str]]:
    paths: dict[str, dict[str, Any]] = openapi_document()["paths"]
    return {(m.upper(), p) for p, ops in paths.items() for m in ops if m in METHODS}


def test_every_served_endpoint_is_documented(tmp_path: Path) -> None:
    missing = served(tmp_path) - documented()
    assert not missing, f"served but not in the OpenAPI document: {sorted(missing)}"


def test_every_documented_endpoint_is_served(tmp_path: Path) -> None:
    extra = documented() - served(tmp_path)
    assert not extra, f"documented but not served: {sorted(extra)}"


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def test_document_is_well_formed() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    schemas = document["components"]["schemas"]
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    for target in _refs(document):
        assert target.startswith("#/components/schemas/")
        assert target.rsplit("/", 1)[1] in schemas, target
    operation_ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(operation_ids) == len(set(operation_ids))
    for path, ops in document["paths"].items():
        for op in ops.values():
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == {part[1:-1] for part in path.split("/") if part[:1] == "{"}
            assert "500" in op["responses"]


def test_openapi_json_is_served_without_credentials(sqlite_store: Callable[..., str]) -> None:
    settings = make_settings(sqlite_store())
    with GatewayClient.running(settings) as client:
        response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi_document()


def _api_routes(routes: list[BaseRoute]) -> Iterator[ApiRoute]:
    for route in routes:
        if isinstance(route, Mount):
            yield from _api_routes(list(route.routes))
        elif isinstance(route, ApiRoute):
            yield route


API_ROUTES = sorted(
    _api_routes(create_app(make_settings("sqlite:////nonexistent/gw.db")).api.routes),  # type: ignore[attr-defined]
    key=lambda route: (route.path, route.method),
)


def _answers(route: ApiRoute) -> set[Any]:
    returns = get_type_hints(route.handler)["return"]
    return set(get_args(returns)) if get_origin(returns) in (Union, UnionType) else {returns}


@pytest.mark.parametrize("route", API_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_each_handler_answers_the_type_its_operation_declares(route: ApiRoute) -> None:
    """A JSON answer declared as a type is that type, encoded by the routing; a handler answers
    a Response of its own only for another media type, no body, or a free-form JSON value."""
    operation, answers = route.operation, _answers(route)
    declared = answer_type(operation)
    if declared is not None and operation.media_type == "application/json":
        assert declared in answers, f"declares {declared.__name__}, answers {answers}"
        others = answers - {declared}
    else:
        others = answers
    assert all(isinstance(a, type) and issubclass(a, Response) for a in others), answers


class Declared(msgspec.Struct):
    value: int


def test_the_routing_refuses_an_answer_of_another_type() -> None:
    routes = Routes("test")

    @routes.get("/thing", "A thing", response=Declared)
    async def thing(_request: Request) -> Any:
        return {"value": 1}  # a dict, not the declared Struct

    @routes.get("/right", "The right thing", response=Declared)
    async def right(_request: Request) -> Declared:
        return Declared(1)

    with TestClient(Starlette(routes=routes)) as client:
        assert client.get("/right").json() == {"value": 1}
        with pytest.raises(TypeError, match="not <class"):
            client.get("/thing")


def test_shape_check_catches_missing_fields_wrong_types_and_extras() -> None:
    """The checker itself: a response missing a required field, with a wrong type, with a
    field the document does not name, or with a non-UTC timestamp is refused."""
    task: dict[str, Any] = {
        "uid": "task_1",
        "factory_uid": "fac_1",
        "title": "t",
        "description": None,
        "stage": "TRIAGE",
        "conversation_id": "c",
        "created_at": "2024-01-02T03:04:05.678901Z",
        "updated_at": "2024-01-02T03:04:05Z",
        "outputs": [],
    }
    path = "/api/v1/factory/{uid}/tasks/{task_uid}"

    def errors(body: dict[str, Any]) -> list[str]:
        response = httpx.Response(200, json=body)
        return shape_errors("GET", path, response)

    assert errors(task) == []
    assert errors({k: v for k, v in task.items() if k != "stage"})
    assert errors(task | {"stage": 3})
    assert errors(task | {"outputs": [{"id": "o"}]})
    assert errors(task | {"colour": "red"})
    assert errors(task | {"created_at": "2024-01-02T03:04:05+02:00"})
    assert errors(task | {"current_run": {"run_id": "r"}})
    assert shape_errors("GET", path, httpx.Response(418, json=task))


def test_the_replays_declare_the_idempotency_key_header_they_read() -> None:
    paths = openapi_document()["paths"]
    hook = "/api/v1/factory/{uid}/webhooks/{webhook_uid}"
    connection = "/api/v1/provider-connections/{connection_uid}"
    for path in (
        *(f"{hook}/deliveries/{{delivery_id}}/replay", f"{hook}/deliveries/replay"),
        *(f"{connection}/deliveries/{{delivery_id}}/replay", f"{connection}/deliveries/replay"),
    ):
        (key,) = [p for p in paths[path]["post"]["parameters"] if p["name"] == "Idempotency-Key"]
        assert key["in"] == "header" and key["required"] is False
        assert key["schema"] == {"type": "string", "minLength": 1, "maxLength": 200}
