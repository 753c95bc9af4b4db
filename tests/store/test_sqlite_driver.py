"""The embedded store's SQLite adapter (gateway.foundation.store.sqlite_driver): one call on
aiosqlite's thread per statement, none to return a connection that holds no transaction, and
sqlite3's transactions, results and errors unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from gateway.foundation.store.db import Database, create_database


def on_store(test: Callable[[Database], Coroutine[Any, Any, None]]) -> Callable[[Path], None]:
    def run(tmp_path: Path) -> None:
        async def main() -> None:
            database = create_database(f"sqlite+aiosqlite:///{tmp_path}/driver.db")
            try:
                async with database.transaction() as conn:
                    await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)"))
                await test(database)
            finally:
                await database.close()

        asyncio.run(main())

    run.__name__ = test.__name__
    run.__doc__ = test.__doc__
    return run


class ThreadCalls:
    """Counts the calls made on aiosqlite connections' threads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = aiosqlite.Connection._execute

        async def counted(connection: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
            self.count += 1
            return await original(connection, fn, *args, **kw)

        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)


@pytest.fixture
def thread_calls(monkeypatch: pytest.MonkeyPatch) -> ThreadCalls:
    return ThreadCalls(monkeypatch)


def test_a_statement_is_one_call_and_a_read_returns_without_one(
    tmp_path: Path, thread_calls: ThreadCalls
) -> None:
    calls: list[int] = []

    async def check(database: Database) -> None:
        async with database.read() as conn:  # a pooled connection: opened by the setup
            before = thread_calls.count
            rows = (await conn.execute(text("SELECT 1, 'a' UNION SELECT 2, 'b'"))).all()
            calls.append(thread_calls.count - before)
            assert [tuple(row) for row in rows] == [(1, "a"), (2, "b")]
        calls.append(thread_calls.count - before)  # returned to the pool: no rollback call

    on_store(check)(tmp_path)
    assert calls == [1, 1]


@on_store
async def test_commit_keeps_and_rollback_undoes(database: Database) -> None:
    async with database.transaction() as conn:
        result = await conn.execute(text("INSERT INTO t (name) VALUES ('kept')"))
        assert result.rowcount == 1
        assert result.lastrowid == 1
    with pytest.raises(RuntimeError):
        async with database.transaction() as conn:
            await conn.execute(text("INSERT INTO t (name) VALUES ('undone')"))
            raise RuntimeError("the unit of work fails")
    async with database.read() as conn:
        names = (await conn.execute(text("SELECT name FROM t ORDER BY id"))).scalars().all()
    assert names == ["kept"]


@on_store
async def test_rows_counts_and_returning_are_the_statements(database: Database) -> None:
    async with database.transaction() as conn:
        many = await conn.execute(
            text("INSERT INTO t (name) VALUES (:name)"), [{"name": n} for n in "abcd"]
        )
        assert many.rowcount == 4
        updated = await conn.execute(text("UPDATE t SET name = 'x' WHERE id > 2"))
        assert updated.rowcount == 2
        returned = await conn.execute(text("INSERT INTO t (name) VALUES ('r') RETURNING id, name"))
        assert [tuple(row) for row in returned] == [(5, "r")]
        none = await conn.execute(text("SELECT name FROM t WHERE id > 100"))
        assert none.all() == [] and list(none.keys()) == ["name"]

        def fetch_by_arraysize(sync_conn: Any) -> list[Any]:
            cursor = sync_conn.connection.dbapi_connection.cursor()
            assert cursor.arraysize == 1  # sqlite3's default
            cursor.arraysize = 3
            cursor.execute("SELECT id FROM t ORDER BY id")
            return [row[0] for row in cursor.fetchmany()]

        assert await conn.run_sync(fetch_by_arraysize) == [1, 2, 3]


@on_store
async def test_errors_are_sqlalchemys_and_leave_the_connection_usable(
    database: Database,
) -> None:
    async with database.transaction() as conn:
        await conn.execute(text("INSERT INTO t (id, name) VALUES (1, 'one')"))
    with pytest.raises(IntegrityError):
        async with database.transaction() as conn:
            await conn.execute(text("INSERT INTO t (id, name) VALUES (1, 'again')"))
    with pytest.raises(OperationalError):
        async with database.read() as conn:
            await conn.execute(text("SELECT nothing FROM nowhere"))
    async with database.read() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 1
