"""Errors are RFC 9457 problem+json everywhere, and a crash leaks nothing."""

from __future__ import annotations

import pytest

from tests.support import World


def test_internal_errors_leak_no_internals(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    import gateway.platform.factories.routes as factories_api

    async def explode(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("password=hunter2 at /srv/secret/path.py")

    monkeypatch.setattr(factories_api, "get_accessible_factory", explode)
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
