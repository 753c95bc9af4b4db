"""Apply Alembic migrations on start, on the same async engine the app uses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from gateway.foundation.store.db import Database

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
MIGRATION_LOCK_ID = 7_316_402  # PostgreSQL advisory lock: one process migrates at a time
# The newest revision in migrations/versions (a test holds it to Alembic's own head). A store
# already there is left alone without importing Alembic: ~12 MB less in every process.
HEAD_REVISION = "0030"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


async def migrate(database: Database) -> None:
    if await stored_revision(database) == HEAD_REVISION:
        return
    from alembic import command

    async with database.transaction() as conn:
        if not database.is_sqlite:
            await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        await conn.run_sync(lambda sync_conn: command.upgrade(alembic_config(sync_conn), "head"))


async def stored_revision(database: Database) -> str | None:
    """The store's Alembic revision; None for a store never migrated."""
    try:
        async with database.read() as conn:
            return (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    except DBAPIError:  # no alembic_version table yet
        return None
