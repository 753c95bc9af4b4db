from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ingress.hooks import backend_settings
from tests.support import GatewayClient, World


@pytest.fixture(params=["memory", "redis"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def gw(
    backend_kind: str, tmp_path: Path, redis_url: str, redis_prefix: str
) -> Iterator[GatewayClient]:
    settings = backend_settings(
        backend_kind, f"sqlite:///{tmp_path}/gw.db", redis_url, redis_prefix
    )
    with GatewayClient.running(settings) as client:
        yield client


@pytest.fixture
def gw_world(gw: GatewayClient) -> World:
    return World.create(gw)
