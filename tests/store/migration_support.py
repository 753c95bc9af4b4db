"""Helpers of the migration tests."""

from __future__ import annotations

from alembic import command

from gateway.store import Database
from gateway.store.migrate import alembic_config


async def upgrade_to(database: Database, revision: str) -> None:
    async with database.transaction() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), revision))


async def downgrade_to(database: Database, revision: str) -> None:
    async with database.transaction() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), revision))
