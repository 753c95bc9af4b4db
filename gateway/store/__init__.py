"""SQL store: SQLAlchemy Core tables, engine, migrations (SQLite embedded, PostgreSQL at scale)."""

from gateway.store.db import Database, after_commit, create_database
from gateway.store.migrate import migrate

__all__ = ["Database", "after_commit", "create_database", "migrate"]
