"""BulkInsert: every row stored as given, whatever the count, on both databases; on SQLite as a
few multi-row statements of a handful of sizes, inside the caller's transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, select

from gateway.store import create_database
from gateway.store.bulk import MAX_ROWS_PER_STATEMENT, BulkInsert, statement_sizes
from gateway.store.types import UTCDateTime
from tests.conftest import make_settings

metadata = MetaData()
probe = Table(
    "bulk_probe",
    metadata,
    Column("n", Integer, primary_key=True),
    Column("name", String),
    Column("doc", JSON),
    Column("at", UTCDateTime),
)
PROBE = BulkInsert(probe, ("n", "name", "doc", "at"))
START = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "n": i,
            "name": f"row {i}",
            "doc": {"i": i, "even": i % 2 == 0},
            "at": START + timedelta(seconds=i),
        }
        for i in range(count)
    ]


@given(st.integers(0, 10_000), st.integers(1, 40_000))
def test_statement_sizes_cover_the_rows_in_few_shapes(count: int, most: int) -> None:
    sizes = statement_sizes(count, most)
    assert sum(sizes) == count
    assert all(size & (size - 1) == 0 for size in sizes)  # powers of two: few statements
    assert all(size <= min(most, MAX_ROWS_PER_STATEMENT) for size in sizes)
    assert sizes == sorted(sizes, reverse=True)
    assert len(set(sizes)) <= MAX_ROWS_PER_STATEMENT.bit_length()


@pytest.mark.parametrize("count", [0, 1, 3, 1000, 2500])
async def test_every_row_is_stored_as_given(fresh_store: str, count: int) -> None:
    database = create_database(make_settings(fresh_store).database_url)
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        async with database.transaction() as conn:
            await PROBE.insert(conn, rows(count))
        async with database.read() as conn:
            stored = (await conn.execute(select(probe).order_by(probe.c.n))).all()
        assert [tuple(row) for row in stored] == [
            (r["n"], r["name"], r["doc"], r["at"]) for r in rows(count)
        ]
    finally:
        await database.close()


async def test_the_statements_are_the_callers_transaction(fresh_store: str) -> None:
    """1,500 rows whose last repeats a key: the statements before it are undone with it."""
    database = create_database(make_settings(fresh_store).database_url)
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        batch = rows(1500)
        batch[-1] = {**batch[-1], "n": 0}
        with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
            async with database.transaction() as conn:
                await PROBE.insert(conn, batch)
        async with database.read() as conn:
            assert (await conn.execute(select(probe.c.n))).all() == []
    finally:
        await database.close()


async def test_on_sqlite_a_thousand_rows_are_six_statements(tmp_path: Path) -> None:
    """Not one run per row (executemany): 512 + 256 + 128 + 64 + 32 + 8."""
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/bulk.db")
    try:
        async with database.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        statements: list[str] = []
        async with database.transaction() as conn:
            raw = await conn.get_raw_connection()
            await raw.driver_connection.set_trace_callback(statements.append)
            await PROBE.insert(conn, rows(1000))
            await raw.driver_connection.set_trace_callback(None)
        inserts = [s for s in statements if s.startswith("INSERT INTO bulk_probe")]
        assert [s.count("), (") + 1 for s in inserts] == [512, 256, 128, 64, 32, 8]
    finally:
        await database.close()
