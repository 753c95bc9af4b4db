"""Apply Alembic migrations on start, on the same async engine the app uses."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection

from gateway.store.db import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
MIGRATION_LOCK_ID = 7_316_402  # PostgreSQL advisory lock: one process migrates at a time


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


async def migrate(database: Database) -> None:
    async with database.transaction() as conn:
        if not database.is_sqlite:
            await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        await conn.run_sync(lambda sync_conn: command.upgrade(alembic_config(sync_conn), "head"))
