"""SQL store: SQLAlchemy Core tables, engine, migrations (SQLite embedded, PostgreSQL at scale)."""

from gateway.foundation.store.db import Database, after_commit, create_database
from gateway.foundation.store.migrate import migrate

__all__ = ["Database", "after_commit", "create_database", "migrate"]
