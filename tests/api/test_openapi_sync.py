"""The OpenAPI document and the app agree: every served (method, path) is documented and back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from starlette.routing import BaseRoute, Mount, Route

from gateway.api.openapi_document import build_document
from gateway.app import create_app
from gateway.ingress.endpoint import INGRESS_PREFIX
from tests.conftest import make_settings
from tests.support import GatewayClient

METHODS = {"get", "post", "put", "patch", "delete"}


def _walk(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    for route in routes:
        if isinstance(route, Mount):
            yield from _walk(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            for method in route.methods or ():
                if method.lower() in METHODS:  # HEAD is implied by GET
                    yield method.upper(), prefix + route.path


def served(tmp_path: Path) -> set[tuple[str, str]]:
    app: Any = create_app(make_settings(f"sqlite:///{tmp_path}/gw.db"))
    assert app.ingress is not None  # role "all": the dispatcher sends /webhooks/w/ to ingress
    pairs = set(_walk(app.api.routes))
    # The ingress is one raw ASGI endpoint behind a path prefix, not a router: its two shapes
    ingress = INGRESS_PREFIX + "{webhook_uid}"
    return pairs | {("POST", ingress), ("POST", ingress + "/{token}")}


def documented() -> set[tuple[str, str]]:
    paths: dict[str, dict[str, Any]] = build_document()["paths"]
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
    document = build_document()
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


def test_openapi_json_is_served_without_credentials(tmp_path: Path) -> None:
    settings = make_settings(f"sqlite:///{tmp_path}/gw.db")
    with GatewayClient.running(settings) as client:
        response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == build_document()


def test_documented_bodies_accept_what_the_api_accepts() -> None:
    """Spot-check: the request schemas agree with the handlers on required and unknown fields."""
    schemas = build_document()["components"]["schemas"]
    webhook = Draft202012Validator(schemas["WebhookCreate"])
    assert webhook.is_valid({"name": "n", "auth_mode": "url_token"})
    assert not webhook.is_valid({"auth_mode": "token"})
    assert not webhook.is_valid({"name": "n", "colour": "red"})
    patch = Draft202012Validator(schemas["WebhookPatch"])
    assert patch.is_valid({"delivery_id_header": None}) and not patch.is_valid({"secret": "x"})
