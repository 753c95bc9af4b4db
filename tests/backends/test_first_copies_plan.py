"""De-duplication look-ups read the log by its identity index, whatever its size: once the day
filters fill, most new deliveries are looked up. Without statistics SQLite read the log by
webhook and time instead (every delivery of the webhook in the 7-day window, for each look-up:
~0.7 ms each at 2.5 million deliveries) and ingress fell behind its offered rate."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.delivery_rows import DELIVERIES, EVALUATED, delivery_row
from gateway.foundation.backends.first_copies import Wanted
from gateway.foundation.backends.identity_index import ensure_identity_index, exists
from gateway.foundation.store import create_database, migrate
from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
from gateway.webhook_gateway.transports.embedded.writer import DeliveryWriter, _firsts_in_log
from gateway.webhook_gateway.transports.outbox.file import _FIRST_IN_LOG
from tests.conftest import make_settings

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
WEEK_AGO = NOW - timedelta(days=7)


def _sqlite_plan(path: Path, sql: str, params: Any) -> str:
    with sqlite3.connect(path) as conn:
        return " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))


def test_a_lookup_beside_a_sqlite_file_reads_the_identity_index(tmp_path: Path) -> None:
    """The outbox writer's query, one key at a time, on the store file."""
    path = tmp_path / "store.db"

    async def migrated() -> None:
        database = create_database(f"sqlite+aiosqlite:///{path}")
        await migrate(database)
        await ensure_identity_index(database)  # as the embedded backend does when it starts
        await database.close()

    asyncio.run(migrated())
    plan = _sqlite_plan(path, _FIRST_IN_LOG, ("whk_1", "evt-1", "2026-11-17 12:00:00"))
    assert "USING INDEX ix_deliveries_identity (webhook_uid=? AND identity=?)" in plan, plan


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_batch_of_lookups_reads_the_identity_index(
    own_store: Callable[[str], str], store: str
) -> None:
    """The one-query batch (PostgreSQL, a SQLite store the outbox does not stand beside), on a
    log of 20,000 deliveries whose statistics PostgreSQL has taken."""

    async def look_up(url: str) -> tuple[list[str | None], str]:
        """The batch's answers and its query plan."""
        database = create_database(make_settings(url).database_url)
        statements: list[tuple[str, Any]] = []
        try:
            await migrate(database)
            await ensure_identity_index(database)  # as the embedded backend does when it starts
            async with database.transaction() as conn:
                rows = [
                    delivery_row(
                        DeliveryRecord(f"d-{n}", f"whk_{n % 100}", NOW - timedelta(seconds=n), 2,
                                       Label.ACCEPTED, f"evt-{n}", None, b"{}"),
                        EVALUATED, NOW,
                    )
                    for n in range(20_000)
                ]  # fmt: skip
                await DELIVERIES.insert(conn, rows)
                if store == "postgresql":
                    await conn.execute(text("ANALYZE deliveries"))

            def capture(_conn: Any, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
                if "FROM deliveries" in sql:
                    statements.append((sql, params))

            event.listen(database.engine.sync_engine, "before_cursor_execute", capture)
            wanted = [Wanted(f"whk_{n % 100}", f"evt-{n}", WEEK_AGO, NOW) for n in (7, 19_999)]
            wanted.append(Wanted("whk_3", "evt-never", WEEK_AGO, NOW))
            async with database.read() as conn:
                found = await _firsts_in_log(conn, wanted)
            event.remove(database.engine.sync_engine, "before_cursor_execute", capture)
            ((sql, params),) = statements
            if store == "sqlite":
                return found, _sqlite_plan(Path(url.split(":///", 1)[1]), sql, params)
            async with database.read() as conn:
                raw = await conn.get_raw_connection()
                plan = await raw.driver_connection.fetch(f"EXPLAIN {sql}", *params)  # type: ignore[union-attr]
            return found, " | ".join(row[0] for row in plan)
        finally:
            await database.close()

    found, plan = asyncio.run(look_up(own_store(store)))
    assert found == ["d-7", "d-19999", None]
    assert "ix_deliveries_identity" in plan, plan
    assert "ix_deliveries_received" not in plan and "webhook_received" not in plan, plan


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_identity_index_is_the_embedded_backends_alone(
    own_store: Callable[[str], str], store: str
) -> None:
    """The shared schema has no index by (webhook, identity): with Redis nothing reads one, and
    each logged delivery wrote a page of it. The embedded backend makes it when it starts,
    over the deliveries logged already, once."""

    async def indexes_and_lookup(url: str) -> tuple[bool, bool, bool, list[str | None]]:
        database = create_database(make_settings(url).database_url)
        writer = DeliveryWriter(database)
        try:
            await migrate(database)
            migrated = await exists(database)
            async with database.transaction() as conn:
                record = DeliveryRecord(
                    "d-1", "whk_1", NOW, 2, Label.ACCEPTED, "evt-1", None, b"{}"
                )
                await DELIVERIES.insert(conn, [delivery_row(record, EVALUATED, NOW)])
            await MemoryBackend(database, writer, auth_failure_limit=10, max_backlog=10).preload()
            made = await exists(database)
            await ensure_identity_index(database)  # the next start finds it
            again = await exists(database)
            async with database.read() as conn:
                found = await _firsts_in_log(conn, [Wanted("whk_1", "evt-1", WEEK_AGO, NOW)])
            return migrated, made, again, found
        finally:
            await writer.close()
            await database.close()

    migrated, made, again, found = asyncio.run(indexes_and_lookup(own_store(store)))
    assert (migrated, made, again) == (False, True, True)
    assert found == ["d-1"]


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_processes_starting_together_all_find_the_identity_index(
    own_store: Callable[[str], str], store: str
) -> None:
    """Several embedded backends starting on one store at once (each its own engine, as
    processes have): every one of them starts, and the store has the index once."""

    async def start_together(url: str) -> list[bool]:
        databases = [create_database(make_settings(url).database_url) for _ in range(4)]
        try:
            await asyncio.gather(*(ensure_identity_index(d) for d in databases))
            return [await exists(d) for d in databases]
        finally:
            for database in databases:
                await database.close()

    assert asyncio.run(start_together(own_store(store))) == [True] * 4
