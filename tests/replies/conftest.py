"""The reply clients' tests: each provider's API stands on loopback (stand_in.py), reached by
the httpx client the gateway passes to its reply clients."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client
