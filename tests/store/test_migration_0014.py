"""Migration 0014 on a store with webhooks: `standard-webhooks` rows take the name factory files
use, other schemes and token webhooks are untouched; the downgrade gives the old name back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy import text

from gateway.foundation.store import create_database, migrate
from tests.conftest import make_settings
from tests.store.migration_support import add_team_and_factory, downgrade_to, upgrade_to

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
WEBHOOK = (
    "INSERT INTO webhooks (uid, factory_uid, name, auth_mode, signature_scheme, enabled, "
    "config_version, created_at, updated_at) VALUES (:u, 'fac_1', :u, :m, :s, true, 1, :t, :t)"
)
SCHEMES = "SELECT uid, signature_scheme FROM webhooks ORDER BY uid"


def test_0014_renames_standard_webhooks(fresh_store: str) -> None:
    url = make_settings(fresh_store).database_url

    async def run() -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
        database = create_database(url)
        try:
            await upgrade_to(database, "0013")
            stamp = NOW.replace(tzinfo=None) if database.is_sqlite else NOW
            async with database.transaction() as conn:
                await add_team_and_factory(conn, stamp)
                for uid, mode, scheme in [
                    ("wh_a", "signature", "standard-webhooks"),
                    ("wh_b", "signature", "stripe"),
                    ("wh_c", "token", None),
                    ("wh_d", "signature", "standard-webhooks"),
                ]:
                    await conn.execute(
                        text(WEBHOOK), {"u": uid, "m": mode, "s": scheme, "t": stamp}
                    )
            await migrate(database)
            async with database.read() as conn:
                upgraded = [tuple(row) for row in await conn.execute(text(SCHEMES))]
            await downgrade_to(database, "0013")
            async with database.read() as conn:
                downgraded = [tuple(row) for row in await conn.execute(text(SCHEMES))]
            return upgraded, downgraded
        finally:
            await database.close()

    upgraded, downgraded = asyncio.run(run())
    assert upgraded == [
        ("wh_a", "standard_webhooks"),
        ("wh_b", "stripe"),
        ("wh_c", None),
        ("wh_d", "standard_webhooks"),
    ]
    assert downgraded == [
        ("wh_a", "standard-webhooks"),
        ("wh_b", "stripe"),
        ("wh_c", None),
        ("wh_d", "standard-webhooks"),
    ]
