"""Migration 0015 on a store with automations: webhook triggers take factory_format's canonical
form (the webhook uids as an `in` matcher, the payload pattern beside the filter, an empty one
left out), the new columns and tables appear; the downgrade gives the old shape back and drops
them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import add_team_and_factory, downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
AUTOMATION = (
    "INSERT INTO automations (uid, factory_uid, name, prompt, enabled, triggers, created_at, "
    "updated_at) VALUES (:u, 'fac_1', :u, 'p', true, :triggers, :t, :t)"
)
OLD = {
    "auto_a": [
        {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": ["wh_1"], "payload": {"action": ["opened"]}},
        },
        {"provider": "webhook", "event": "received", "filter": {"webhook_ids": ["wh_2"]}},
    ],
    "auto_b": [
        {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": ["wh_1"], "payload": {}},
        }
    ],
}
CANONICAL = {
    "auto_a": [
        {
            "provider": "webhook",
            "event": "received",
            "filter": {"webhook_ids": {"in": ["wh_1"]}},
            "payload": {"action": ["opened"]},
        },
        {"provider": "webhook", "event": "received", "filter": {"webhook_ids": {"in": ["wh_2"]}}},
    ],
    "auto_b": [
        {"provider": "webhook", "event": "received", "filter": {"webhook_ids": {"in": ["wh_1"]}}}
    ],
}


def _triggers(rows: Any) -> dict[str, Any]:
    return {uid: json.loads(value) if isinstance(value, str) else value for uid, value in rows}


def test_0017_rewrites_triggers_and_adds_the_definition_storage(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0016")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await add_team_and_factory(conn, stamp)
                for uid, triggers in OLD.items():
                    await conn.execute(
                        text(AUTOMATION), {"u": uid, "triggers": json.dumps(triggers), "t": stamp}
                    )
            await migrate(database)
            select = text("SELECT uid, triggers FROM automations ORDER BY uid")
            async with database.read() as conn:
                upgraded = _triggers(await conn.execute(select))
                tables = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                factory_columns = await conn.run_sync(
                    lambda sync: {c["name"] for c in inspect(sync).get_columns("factories")}
                )
            await downgrade_to(database, "0016")
            async with database.read() as conn:
                downgraded = _triggers(await conn.execute(select))
                left = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                columns_left = await conn.run_sync(
                    lambda sync: {c["name"] for c in inspect(sync).get_columns("factories")}
                )
            return {
                "upgraded": upgraded,
                "tables": tables,
                "factory_columns": factory_columns,
                "downgraded": downgraded,
                "left": left,
                "columns_left": columns_left,
            }
        finally:
            await database.close()

    found = asyncio.run(run())
    assert found["upgraded"] == CANONICAL
    assert {"factory_runners", "factory_skills"} <= found["tables"]
    assert {"repositories", "agent_defaults", "schema_version"} <= found["factory_columns"]
    # the empty payload of auto_b was left out on the way up
    assert found["downgraded"] == {
        "auto_a": OLD["auto_a"],
        "auto_b": [
            {"provider": "webhook", "event": "received", "filter": {"webhook_ids": ["wh_1"]}}
        ],
    }
    assert not {"factory_runners", "factory_skills"} & found["left"]
    assert "repositories" not in found["columns_left"]
