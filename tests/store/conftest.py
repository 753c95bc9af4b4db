"""Fixtures of the store tests: stores never migrated, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testbed.postgres import temporary_database
from tests.conftest import POSTGRES_SERVER, RUN_ID


@contextmanager
def empty_store(kind: str, directory: Path, name: str) -> Iterator[str]:
    """The URL of an empty store of `kind` ("sqlite" or "postgresql"), dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{directory}/{name}.db"
        return
    with temporary_database(f"gwtest_{RUN_ID}_{name}", POSTGRES_SERVER) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of this test's own, never migrated (the session's PostgreSQL one is at head)."""
    with empty_store(request.param, tmp_path, "migration") as url:
        yield url
