"""SQL store: SQLAlchemy Core tables, engine, migrations (SQLite embedded, PostgreSQL at scale)."""

from gateway.store.db import Database, create_database
from gateway.store.migrate import migrate

__all__ = ["Database", "create_database", "migrate"]
