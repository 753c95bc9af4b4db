"""Migration 0005 on a store with data: logged deliveries keep everything and get no trace,
the replay table appears, and the downgrade gives the schema back with the data."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DELIVERY = (
    "INSERT INTO deliveries (delivery_id, webhook_uid, received_at, size, label, payload, "
    "evaluation) VALUES ('dlv_1', 'wh_1', :t, 2, 'Accepted', :p, 'evaluated')"
)


def test_0005_adds_traces_and_replays(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0004")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(text(DELIVERY), {"t": stamp, "p": b"{}"})
            await migrate(database)
            async with database.read() as conn:
                row = (
                    await conn.execute(text("SELECT delivery_id, payload, trace FROM deliveries"))
                ).one()
                tables = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
                indexes = await conn.run_sync(
                    lambda sync: {i["name"] for i in inspect(sync).get_indexes("delivery_replays")}
                )
            await downgrade_to(database, "0004")
            async with database.read() as conn:
                result = await conn.execute(text("SELECT * FROM deliveries"))
                columns, kept = list(result.keys()), result.all()
                left = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
            return {
                "row": tuple(row),
                "tables": tables,
                "indexes": indexes,
                "columns": columns,
                "kept": len(kept),
                "left": left,
            }
        finally:
            await database.close()

    found = asyncio.run(run())
    assert found["row"] == ("dlv_1", b"{}", None)
    assert "delivery_replays" in found["tables"]
    assert found["indexes"] >= {"ix_delivery_replays_replay_of", "ux_delivery_replays_key"}
    assert "trace" not in found["columns"] and found["kept"] == 1
    assert "delivery_replays" not in found["left"]
