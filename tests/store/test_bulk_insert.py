"""BulkInsert: every row written once, in order, whatever the count, on both stores; a large
batch as a few multi-row statements of power-of-two sizes (`row_chunks`), each under the
store's parameter limit, and the rest (all of a small batch) as one executemany."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    event,
    select,
    text,
)

from gateway.foundation.store.bulk import (
    MAX_PARAMETERS,
    MULTI_ROWS_FROM,
    SQLITE_PARAMETERS,
    BulkInsert,
    from_sqlite_time,
    parameter_limit,
    row_chunks,
    sqlite_time,
)
from gateway.foundation.store.db import create_database
from gateway.foundation.store.types import UTCDateTime
from tests.store.conftest import empty_store

metadata = MetaData()
ROWS = Table(
    "bulk_rows",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(40)),
    Column("at", UTCDateTime),
    Column("data", JSON),
    Column("body", LargeBinary),
)
BULK = BulkInsert(ROWS, ("id", "name", "at", "data", "body"))
START = datetime(2026, 12, 3, tzinfo=UTC)


def _rows(count: int) -> list[dict[str, object]]:
    return [
        {
            "id": i,
            "name": None if i % 7 == 3 else f"row {i}",
            "at": START + timedelta(microseconds=i),
            "data": {"n": i, "tags": ["a", "b"]},
            "body": bytes([i % 256]) * (1 + i % 300),
        }
        for i in range(count)
    ]


def _async(url: str) -> str:
    """The store's URL with its async driver named (as settings name it)."""
    for scheme, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
    ):
        if url.startswith(scheme):
            return driver + url[len(scheme) :]
    return url


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("count", [0, 1, 3, 1000, 1537])
def test_every_row_is_written_once_with_its_values(kind: str, count: int, tmp_path: Path) -> None:
    async def main(url: str) -> None:
        database = create_database(_async(url))
        try:
            async with database.transaction() as conn:
                await conn.run_sync(metadata.create_all)
            rows = _rows(count)
            async with database.transaction() as conn:
                await BULK.insert(conn, BULK.prepare(conn.dialect, rows, "id"))
            async with database.read() as conn:
                stored = [
                    dict(r._mapping) for r in await conn.execute(select(ROWS).order_by(ROWS.c.id))
                ]
                assert (
                    await conn.execute(text("SELECT count(*) FROM bulk_rows"))
                ).scalar() == count
            assert stored == rows
        finally:
            await database.close()

    with empty_store(kind, tmp_path, f"bulk{count}") as url:
        asyncio.run(main(url))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_large_batch_goes_as_multi_row_statements(kind: str, tmp_path: Path) -> None:
    """1,000 rows: a statement per chunk and one executemany of the rest, on either store (on
    PostgreSQL an executemany is one execution a row in the server)."""
    count = 1000
    chunks = row_chunks(count, len(BULK.columns), parameter_limit(kind))
    assert chunks and sum(n for _, n in chunks) < count  # some rows are left for executemany

    async def main(url: str) -> None:
        database = create_database(_async(url))
        executed: list[tuple[int, bool]] = []  # (rows in the statement's VALUES, executemany)

        def seen(_conn: Any, _cursor: Any, sql: str, _params: Any, _ctx: Any, many: bool) -> None:
            if sql.startswith("INSERT INTO bulk_rows"):
                executed.append((sql.count("("), many))

        try:
            async with database.transaction() as conn:
                await conn.run_sync(metadata.create_all)
            for engine in database.engines:
                event.listen(engine.sync_engine, "before_cursor_execute", seen)
            async with database.transaction() as conn:
                await BULK.insert(conn, BULK.prepare(conn.dialect, _rows(count), "id"))
            async with database.read() as conn:
                stored = (await conn.execute(text("SELECT count(*) FROM bulk_rows"))).scalar()
            assert stored == count
        finally:
            await database.close()
        # "(": the column list's, then each row's VALUES
        assert executed == [(1 + n, False) for _, n in chunks] + [(2, True)]

    with empty_store(kind, tmp_path, "bulkchunks") as url:
        asyncio.run(main(url))


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 100, 1000, 1024, 1025, 5000])
@pytest.mark.parametrize("width", [1, 5, 14, 40])
@pytest.mark.parametrize("limit", [SQLITE_PARAMETERS, 999])  # 999: SQLite before 3.32
def test_row_chunks_cover_the_rows_in_few_power_of_two_statements(
    rows: int, width: int, limit: int
) -> None:
    chunks = row_chunks(rows, width, limit)
    starts = [start for start, _ in chunks]
    counts = [count for _, count in chunks]
    assert starts == [sum(counts[:i]) for i in range(len(counts))]  # contiguous, from the first
    assert all(count & (count - 1) == 0 for count in counts)  # powers of two: few texts
    assert all(count * width <= limit for count in counts)
    assert counts == sorted(counts, reverse=True)
    largest = max(c for c in (1 << k for k in range(20)) if c * width <= limit)
    smallest = max(2, min(MULTI_ROWS_FROM, largest))
    assert all(count >= smallest for count in counts)
    # what is left for one executemany is fewer rows than the smallest statement takes
    assert 0 <= rows - sum(counts) < smallest
    # the largest size as often as it fits, then one statement per binary digit of the rest
    assert len(chunks) <= rows // largest + largest.bit_length()


def test_a_small_batch_is_one_executemany_as_before() -> None:
    assert row_chunks(MULTI_ROWS_FROM - 1, 14) == []
    assert row_chunks(1, 14) == []
    assert row_chunks(MULTI_ROWS_FROM, 14) == [(0, MULTI_ROWS_FROM)]
    assert row_chunks(1000, 14) == [(0, 512), (512, 256), (768, 128), (896, 64)]  # + 40
    assert row_chunks(1000, 2000, 999) == []  # a row a statement: executemany's way


def test_the_sqlite_limit_is_the_librarys_own() -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        library = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    assert min(MAX_PARAMETERS, library) == SQLITE_PARAMETERS


def test_a_time_encodes_to_the_same_text_however_often_it_is_encoded() -> None:
    """`sqlite_time` keeps the texts of the time objects it encoded last: one object given
    again reads its text back, another time (of any zone) is encoded anew."""
    at = datetime(2026, 12, 4, 13, 5, 7, 123456, tzinfo=UTC)
    assert sqlite_time(at) == sqlite_time(at) == "2026-12-04 13:05:07.123456"
    later = at + timedelta(microseconds=1)
    assert sqlite_time(later) == "2026-12-04 13:05:07.123457"
    east = datetime(2026, 12, 4, 15, 5, 7, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert sqlite_time(east) == sqlite_time(east) == "2026-12-04 13:05:07.123456"
    assert from_sqlite_time(sqlite_time(east) or "") == east
    # more times than it keeps: each still its own text
    times = [at + timedelta(seconds=i) for i in range(10_000)]
    texts = [sqlite_time(t) for t in times]
    assert texts == [sqlite_time(t) for t in times]
    assert [from_sqlite_time(text or "") for text in texts] == times
    with pytest.raises(ValueError, match="naive"):
        sqlite_time(datetime(2026, 12, 4, 13, 5))
    assert sqlite_time(None) is None


def test_times_are_encoded_from_several_threads_at_once() -> None:
    """The ingress's event loop and its outbox thread both encode times, and share the texts
    kept. Threads switched as often as they can be, with garbage whose finalizers run Python
    code in the middle of the kept texts' upkeep (as the gateway's objects do): no error, and
    every text its time's."""

    class Cycle:  # collected by the garbage collector, which runs its finalizer
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            pass

    start = datetime(2026, 12, 4, tzinfo=UTC)

    def encode(offset: int) -> bool:
        ok = True
        for i in range(50_000):
            at = start + timedelta(seconds=offset + i)
            ok = ok and from_sqlite_time(sqlite_time(at) or "") == at
            if i % 3 == 0:
                Cycle()
        return ok

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            assert all(pool.map(encode, range(0, 400_000, 100_000)))
    finally:
        sys.setswitchinterval(interval)
