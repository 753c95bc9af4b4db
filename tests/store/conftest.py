"""Fixtures of the store tests: a store never migrated, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.postgres import temporary_database
from tests.conftest import POSTGRES_SERVER, RUN_ID


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of this test's own, never migrated (the session's PostgreSQL one is at head)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/old.db"
        return
    with temporary_database(f"gwtest_{RUN_ID}_migration", POSTGRES_SERVER) as url:
        yield url
