"""Migration 0007 on a store with data: existing delivery records keep everything and get no
reason and no headers; new records can hold both; the downgrade gives the table back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DELIVERY = (
    "INSERT INTO deliveries (delivery_id, webhook_uid, received_at, size, label, payload, "
    "evaluation) VALUES (:d, 'wh_1', :t, 2, :l, :p, :e)"
)


def test_0007_adds_reason_and_headers(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> dict[str, Any]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0006")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await conn.execute(
                    text(DELIVERY),
                    {"d": "dlv_old", "t": stamp, "l": "Accepted", "p": b"{}", "e": "evaluated"},
                )
            await migrate(database)
            async with database.transaction() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO deliveries (delivery_id, webhook_uid, received_at, size, "
                        "label, reason, headers) VALUES ('dlv_new', 'wh_1', :t, 2, "
                        "'Rejected (auth)', 'signature_mismatch', NULL)"
                    ),
                    {"t": stamp},
                )
            async with database.read() as conn:
                rows = (
                    await conn.execute(
                        text(
                            "SELECT delivery_id, label, payload, reason, headers FROM deliveries "
                            "ORDER BY delivery_id"
                        )
                    )
                ).all()
            await downgrade_to(database, "0006")
            async with database.read() as conn:
                columns = list((await conn.execute(text("SELECT * FROM deliveries"))).keys())
                left = (await conn.execute(text("SELECT count(*) FROM deliveries"))).scalar()
            return {"rows": rows, "columns": columns, "left": left}
        finally:
            await database.close()

    found = asyncio.run(run())
    assert [tuple(row) for row in found["rows"]] == [
        ("dlv_new", "Rejected (auth)", None, "signature_mismatch", None),
        ("dlv_old", "Accepted", b"{}", None, None),
    ]
    assert not {"reason", "headers"} & set(found["columns"])
    assert found["left"] == 2
