"""A SQLite file's write transactions go through one connection of their own, with a larger page
cache (gateway.foundation.store.db.writer_engine): its cache then lasts from one transaction to
the next. Reads keep the pool; an in-memory store keeps one engine, and which store is a file
is decided by one rule (`sqlite_file`)."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from gateway.foundation.store.db import WRITER_CACHE_KIB, Database, create_database, sqlite_file
from tests.store.test_sqlite_driver import on_store


async def _connection_id(conn: object) -> int:
    raw = await conn.get_raw_connection()  # type: ignore[attr-defined]
    return id(raw.driver_connection)


@on_store
async def test_write_transactions_share_one_connection_with_a_larger_cache(
    database: Database,
) -> None:
    assert database.writer is not database.engine
    seen: set[int] = set()
    for _ in range(3):
        async with database.transaction() as conn:
            seen.add(await _connection_id(conn))
            cache = (await conn.execute(text("PRAGMA cache_size"))).scalar()
            assert cache == -WRITER_CACHE_KIB
    assert len(seen) == 1
    async with database.read() as conn:
        assert (await conn.execute(text("PRAGMA cache_size"))).scalar() == -2000
        assert await _connection_id(conn) not in seen


@on_store
async def test_writes_are_read_by_the_pool_and_survive_a_failed_transaction(
    database: Database,
) -> None:
    async with database.transaction() as conn:
        await conn.execute(text("INSERT INTO t (id) VALUES (1)"))
    try:
        async with database.transaction() as conn:
            await conn.execute(text("INSERT INTO t (id) VALUES (2)"))
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    async with database.transaction() as conn:  # the writer is usable again
        await conn.execute(text("INSERT INTO t (id) VALUES (3)"))
    async with database.read() as conn:
        rows = (await conn.execute(text("SELECT id FROM t ORDER BY id"))).scalars().all()
    assert rows == [1, 3]


@on_store
async def test_a_nested_transaction_of_the_holder_does_not_wait_for_the_writer(
    database: Database,
) -> None:
    async with database.transaction() as outer:
        await outer.execute(text("INSERT INTO t (id) VALUES (1)"))
        async with asyncio.timeout(5):  # a second connection, not the pool's timeout
            async with database.transaction() as inner:
                rows = (await inner.execute(text("SELECT count(*) FROM t"))).scalar()
    assert rows == 0  # the outer transaction had not committed


def test_an_in_memory_store_keeps_one_engine() -> None:
    async def main() -> None:
        database = create_database("sqlite+aiosqlite://")
        try:
            assert database.writer is database.engine
            async with database.transaction() as conn:
                await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
                await conn.execute(text("INSERT INTO t VALUES (1)"))
            async with database.read() as conn:
                assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 1
        finally:
            await database.close()

    asyncio.run(main())


def test_which_store_urls_name_a_file() -> None:
    assert sqlite_file("sqlite+aiosqlite:///data/gateway.db") == "data/gateway.db"
    assert sqlite_file("sqlite:////var/lib/gw.db?timeout=5") == "/var/lib/gw.db"
    for memory in (
        "sqlite+aiosqlite://",
        "sqlite:///:memory:",
        "sqlite:///file:x?mode=memory&uri=true",
        "sqlite:///x?mode=memory&uri=true",  # in memory too, as the settings say
    ):
        assert sqlite_file(memory) is None, memory
    assert sqlite_file("postgresql+asyncpg://postgres@127.0.0.1/test") is None
