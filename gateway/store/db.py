"""The async engine, with the pragmas SQLite needs to serve concurrent readers and one writer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine


class Database:
    """Owns the engine; `transaction()` is the unit of work for domain code."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.begin() as conn:
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    async def close(self) -> None:
        await self.engine.dispose()


def create_database(url: str, **engine_options: Any) -> Database:
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
        engine = create_async_engine(url, connect_args={"timeout": 30}, **engine_options)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    else:
        engine_options.setdefault("pool_size", 10)
        engine_options.setdefault("max_overflow", 20)
        engine_options.setdefault("pool_pre_ping", True)
        engine = create_async_engine(url, **engine_options)
    return Database(engine)


def _ensure_sqlite_dir(url: str) -> None:
    path = url.split(":///", 1)[-1]
    if path and path != ":memory:" and not path.startswith("file:"):
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
