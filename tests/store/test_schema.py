"""One schema: the migrations, run from nothing, build exactly what
gateway/foundation/store/tables.py describes. Alembic's comparison (the one `alembic revision
--autogenerate` makes: tables, columns, types, nullability, server defaults, indexes, unique and
foreign keys) finds nothing to change, and the partial indexes' conditions, which it does not
compare, are those of a store built from the metadata itself (each dialect normalises a condition,
so both sides are read back the same way)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from gateway.foundation.store import create_database, migrate
from gateway.foundation.store.tables import metadata
from tests.conftest import make_settings
from tests.store.conftest import empty_store

OPTIONS = {"compare_type": True, "compare_server_default": True}
# maintained by the migrations alone, outside the metadata
ALEMBIC_VERSION = "alembic_version"


def test_the_migrated_store_is_what_tables_py_describes(fresh_store: str) -> None:
    differences = asyncio.run(_read(fresh_store, build=migrate, look=_alembic_differences))
    assert differences == [], "\n".join(map(str, differences))


def test_partial_indexes_have_the_conditions_tables_py_gives(
    fresh_store: str, tmp_path: Path
) -> None:
    migrated = asyncio.run(_read(fresh_store, build=migrate, look=_index_conditions))
    kind = "sqlite" if fresh_store.startswith("sqlite") else "postgresql"
    with empty_store(kind, tmp_path, "from_metadata") as url:
        described = asyncio.run(_read(url, build=_create_all, look=_index_conditions))
    assert sum(1 for where in described.values() if where) >= 5  # the runs' queues, pending ...
    assert migrated == described


async def _read(url: str, *, build: Any, look: Any) -> Any:
    database = create_database(make_settings(url).database_url)
    try:
        await build(database)
        async with database.engine.connect() as conn:
            return await conn.run_sync(look)
    finally:
        await database.close()


async def _create_all(database: Any) -> None:
    async with database.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)


def _alembic_differences(conn: Connection) -> list[Any]:
    found: list[Any] = compare_metadata(MigrationContext.configure(conn, opts=OPTIONS), metadata)
    return found


def _index_conditions(conn: Connection) -> dict[tuple[str, str], str | None]:
    """(table, index) -> the index's condition as the database gives it back, None if whole."""
    inspector = inspect(conn)
    conditions: dict[tuple[str, str], str | None] = {}
    for table in inspector.get_table_names():
        if table == ALEMBIC_VERSION:
            continue
        for index in inspector.get_indexes(table):
            options = index.get("dialect_options", {})
            where = options.get("postgresql_where", options.get("sqlite_where"))
            text = None if where is None else " ".join(str(where).split())
            conditions[(table, str(index["name"]))] = text
    return conditions
