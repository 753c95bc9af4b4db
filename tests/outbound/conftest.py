"""The outbound package's tests: a store of either kind, and senders of a kind of their own per
test (so the shared PostgreSQL database's other messages are never theirs)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from gateway.foundation.store import Database, create_database
from tests.conftest import make_settings


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    database = create_database(make_settings(database_url).database_url)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def kind() -> str:
    return f"test-{secrets.token_hex(4)}"
