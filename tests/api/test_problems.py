"""Errors are RFC 9457 problem+json everywhere, and a crash leaks nothing."""

from __future__ import annotations

import pytest

from tests.support import World


def test_internal_errors_leak_no_internals(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    import gateway.platform.factories.routes as factories_api

    async def explode(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("password=hunter2 at /srv/secret/path.py")

    monkeypatch.setattr(factories_api, "factory_of", explode)
    response = world.api("GET", f"/factory/{world.factory_uid}")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) == {"type", "title", "status", "detail", "code"}
    assert body["code"] == "internal_error"
    assert "hunter2" not in response.text and "secret" not in response.text


def test_missing_credentials_are_problem_json(world: World) -> None:
    response = world.api("GET", "/factory", headers={"Authorization": "Basic abc"})
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"].startswith("Authorization")


def test_one_title_per_status_whoever_answers(world: World) -> None:
    """The router's 404 and 405 carry the titles of the service's own 404 and 405 problems."""
    unknown_route = world.api("GET", "/no/such/endpoint")
    unknown_run = world.api("GET", "/agent/runs/00000000-0000-4000-8000-000000000000")
    wrong_method = world.api("DELETE", "/agent/runs")
    assert unknown_route.status_code == unknown_run.status_code == 404
    assert unknown_route.json()["title"] == unknown_run.json()["title"] == "Not found"
    assert unknown_route.json()["code"] == unknown_run.json()["code"] == "not_found"
    assert wrong_method.status_code == 405
    assert wrong_method.json()["title"] == "Method not allowed"
    assert wrong_method.json()["code"] == "method_not_allowed"
