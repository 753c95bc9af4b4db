"""Attachment content in the SQL store itself (the `blobs` table): the default, nothing else to
run or share between processes."""

from __future__ import annotations

from sqlalchemy import delete, insert, select

from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow

b = t.blobs


class DatabaseBlobs:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def put(self, key: str, content: bytes, content_type: str) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(delete(b).where(b.c.key == key))
            await conn.execute(
                insert(b).values(key=key, content=content, size=len(content), created_at=utcnow())
            )

    async def get(self, key: str) -> bytes | None:
        async with self.database.read() as conn:
            found = (await conn.execute(select(b.c.content).where(b.c.key == key))).scalar()
        return None if found is None else bytes(found)

    async def delete(self, key: str) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(delete(b).where(b.c.key == key))

    async def close(self) -> None:
        return None  # the database is the services' own
