"""Migration 0003 on a store with data: agents get updated_at, runs their executing agent and
the moment they failed, and the downgrade gives the columns back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
RUN = (
    "INSERT INTO runs (run_id, team_uid, factory_uid, conversation_id, parent_run_id, "
    "root_run_id, prompt, state, source, run_type, creator_kind, creator_uid, created_at, "
    "updated_at, task_pending) VALUES (:r, 'team', :f, :r, :p, :root, 'p', :s, 'API', 'cloud', "
    ":k, :c, :t, :t, false)"
)


def test_0003_fills_the_new_columns(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0002")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(text("INSERT INTO teams VALUES ('team', 'T', :t)"), {"t": stamp})
                for agent in ("foreman", "helper"):
                    await conn.execute(
                        text("INSERT INTO agents VALUES (:a, 'team', :a, :t)"),
                        {"a": agent, "t": stamp},
                    )
                await conn.execute(
                    text(
                        "INSERT INTO factories VALUES ('fac', 'team', 'F', NULL, 'foreman', :t, :t)"
                    ),
                    {"t": stamp},
                )
                for run_id, factory, parent, state, kind, creator in (
                    ("dispatched", "fac", None, "FAILED", "user", "someone"),
                    ("child", "fac", "dispatched", "QUEUED", "agent", "helper"),
                    ("own", None, None, "SUCCEEDED", "agent", "helper"),
                    ("personal", None, None, "QUEUED", "user", "someone"),
                ):
                    await conn.execute(
                        text(RUN),
                        {"r": run_id, "f": factory, "p": parent, "root": parent or run_id,
                         "s": state, "k": kind, "c": creator, "t": stamp},
                    )  # fmt: skip
            await migrate(database)
            async with database.read() as conn:
                runs = (
                    await conn.execute(text("SELECT run_id, agent_uid, failed_at FROM runs"))
                ).all()
                agents = (await conn.execute(text("SELECT uid, updated_at FROM agents"))).all()
            await downgrade_to(database, "0002")
            async with database.read() as conn:
                columns = (await conn.execute(text("SELECT * FROM runs"))).keys()
            return {"runs": runs, "agents": agents, "columns": list(columns)}
        finally:
            await database.close()

    found = asyncio.run(run())
    runs = {row[0]: (row[1], row[2] is not None) for row in found["runs"]}
    assert runs == {
        "dispatched": ("foreman", True),  # work dispatched to the factory: its foreman's
        "child": ("helper", False),  # created with an agent key: that agent's
        "own": ("helper", False),
        "personal": (None, False),
    }
    assert all(updated is not None for _, updated in found["agents"])
    assert "agent_uid" not in found["columns"] and "failed_at" not in found["columns"]
