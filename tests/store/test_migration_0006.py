"""Migration 0006 (inbox and schedules) on a store with data: the inbox and schedule tables appear,
existing rows are untouched, and the downgrade removes exactly what it added."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
RUN = (
    "INSERT INTO runs (run_id, team_uid, conversation_id, root_run_id, prompt, state, source, "
    "run_type, created_at, updated_at, task_pending) VALUES ('r1', 'team', 'r1', 'r1', 'p', "
    "'FAILED', 'API', 'cloud', :t, :t, false)"
)
NEW_TABLES = {"inbox_notifications", "inbox_recipients", "scheduled_agents"}


def test_0005_adds_the_inbox_and_schedule_tables(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0004")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(text(RUN), {"t": stamp})
            await migrate(database)
            async with database.read() as conn:
                tables = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                runs = (await conn.execute(text("SELECT run_id, state FROM runs"))).all()
                empty = (
                    await conn.execute(text("SELECT count(*) FROM inbox_notifications"))
                ).scalar_one()
            await downgrade_to(database, "0004")
            async with database.read() as conn:
                left = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
            return {"tables": tables, "runs": runs, "empty": empty, "left": left}
        finally:
            await database.close()

    found = asyncio.run(run())
    assert found["tables"] >= NEW_TABLES
    assert [tuple(row) for row in found["runs"]] == [("r1", "FAILED")]
    assert found["empty"] == 0  # no notifications invented for events before the migration
    assert not NEW_TABLES & found["left"]
    assert "runs" in found["left"]
