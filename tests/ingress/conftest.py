from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.ingress.hooks import backend_settings, redis_url_for
from tests.support import GatewayClient, World


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def gw(
    request: pytest.FixtureRequest,
    backend_kind: str,
    sqlite_store: Callable[..., str],
    redis_url: str,
    redis_prefix: str,
) -> Iterator[GatewayClient]:
    url = redis_url_for(backend_kind, request, redis_url)
    settings = backend_settings(backend_kind, sqlite_store(), url, redis_prefix)
    with GatewayClient.running(settings) as client:
        yield client


@pytest.fixture
def gw_world(gw: GatewayClient) -> World:
    return World.create(gw)
