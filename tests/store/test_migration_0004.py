"""Migration 0004 on a store with data: existing runs get no holder and no attempts, the
runner tables appear, and the downgrade gives everything back."""

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
    "run_type, created_at, updated_at, task_pending) VALUES (:r, 'team', :r, :r, 'p', :s, 'API', "
    "'cloud', :t, :t, false)"
)
NEW_TABLES = {"runners", "run_events", "run_artifacts", "run_usage"}


def test_0004_adds_leases_and_the_runner_tables(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0003")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                for run_id, state in (("queued", "QUEUED"), ("done", "SUCCEEDED")):
                    await conn.execute(text(RUN), {"r": run_id, "s": state, "t": stamp})
            await migrate(database)
            async with database.read() as conn:
                runs = (
                    await conn.execute(
                        text("SELECT run_id, runner_uid, lease_expires_at, attempts FROM runs")
                    )
                ).all()
                tables = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
            await downgrade_to(database, "0003")
            async with database.read() as conn:
                columns = list((await conn.execute(text("SELECT * FROM runs"))).keys())
                left = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
            return {"runs": runs, "tables": tables, "columns": columns, "left": left}
        finally:
            await database.close()

    found = asyncio.run(run())
    assert sorted(tuple(row) for row in found["runs"]) == [
        ("done", None, None, 0),
        ("queued", None, None, 0),
    ]
    assert found["tables"] >= NEW_TABLES
    assert not NEW_TABLES & found["left"]
    assert not {"runner_uid", "lease_expires_at", "attempts"} & set(found["columns"])
