"""Migration 0015 on a store with a runner and a usage report: the new columns arrive empty (the
runner joins the pool and opens no debug session; the report counts as fully reported), the
blobs table takes content; the downgrade gives the tables back as they were."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
RUNNER = (
    "INSERT INTO runners (uid, team_uid, agent_uid, name, concurrency, started_at, last_seen_at) "
    "VALUES ('rnr_1', 'team_1', 'agent_1', 'r', 1, :t, :t)"
)
USAGE = (
    "INSERT INTO run_usage (id, run_id, input_tokens, output_tokens, component, cost_usd, "
    "reported_at) VALUES ('use_1', 'run_1', 5, 2, 'llm', 0.5, :t)"
)


def _columns(sync: Any, table: str) -> set[str]:
    return {column["name"] for column in inspect(sync).get_columns(table)}


def test_0016_adds_content_workers_debug_sessions_and_snapshots(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0015")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(text(RUNNER), {"t": stamp})
                await conn.execute(text(USAGE), {"t": stamp})
            await migrate(database)
            found: dict[str, Any] = {}
            async with database.transaction() as conn:
                runner = (
                    await conn.execute(text("SELECT worker_id, debug_sessions FROM runners"))
                ).one()
                usage = (
                    await conn.execute(text("SELECT attempt, unreported FROM run_usage"))
                ).one()
                found["runner"], found["usage"] = tuple(runner), tuple(usage)
                await conn.execute(
                    text(
                        "INSERT INTO blobs (key, content, size, created_at) VALUES ('k', :c, 3, :t)"
                    ),
                    {"c": b"abc", "t": stamp},
                )
                found["blob"] = (await conn.execute(text("SELECT content FROM blobs"))).scalar_one()
                found["runs"] = await conn.run_sync(_columns, "runs")
            await downgrade_to(database, "0015")
            async with database.read() as conn:
                found["after"] = await conn.run_sync(
                    lambda sync: {
                        table: _columns(sync, table)
                        for table in ("runs", "runners", "attachments", "run_usage", "run_messages")
                    }
                )
                found["tables"] = await conn.run_sync(
                    lambda sync: set(inspect(sync).get_table_names())
                )
            return found
        finally:
            await database.close()

    found = asyncio.run(run())
    assert found["runner"] in ((None, False), (None, 0))
    assert found["usage"] == (None, None)
    assert bytes(found["blob"]) == b"abc"
    assert {"worker_host", "debug_session", "debug_runner_uid"} <= found["runs"]
    after = found["after"]
    assert not {"worker_host", "debug_session", "debug_runner_uid"} & after["runs"]
    assert not {"worker_id", "debug_sessions"} & after["runners"]
    assert not {"blob_key", "uploaded_at"} & after["attachments"]
    assert not {"attempt", "unreported"} & after["run_usage"]
    assert "action" not in after["run_messages"]
    assert "blobs" not in found["tables"]
