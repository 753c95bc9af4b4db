"""Helpers of the migration tests."""

from __future__ import annotations

from datetime import datetime

from alembic import command
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import Database
from gateway.foundation.store.migrate import alembic_config


async def upgrade_to(database: Database, revision: str) -> None:
    async with database.transaction() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), revision))


async def downgrade_to(database: Database, revision: str) -> None:
    async with database.transaction() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), revision))


async def add_team_and_factory(conn: AsyncConnection, stamp: datetime) -> None:
    """Team `team_1` and its factory `fac_1`, in the columns every revision since 0013 has."""
    await conn.execute(
        text("INSERT INTO teams (uid, name, created_at) VALUES ('team_1', 'T', :t)"), {"t": stamp}
    )
    await conn.execute(
        text(
            "INSERT INTO factories (uid, team_uid, name, created_at, updated_at) "
            "VALUES ('fac_1', 'team_1', 'F', :t, :t)"
        ),
        {"t": stamp},
    )
