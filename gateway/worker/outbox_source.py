"""Embedded source: rows of the SQL outbox, deleted in the same transaction that logs them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.base import DeliveryRecord, Label
from gateway.store import Database
from gateway.store import tables as t
from gateway.worker.consumer import Entry

o = t.ingress_outbox
SQLITE_BATCH = 16


class OutboxSource:
    def __init__(
        self, database: Database, *, batch: int | None = None, idle_wait: float = 0.1
    ) -> None:
        self.database = database
        # SQLite has one writer: the batch transaction holds it, and every ingress commit waits
        # for it to end, so a small batch keeps the 202s flowing while the evaluator runs
        self.batch = batch if batch is not None else (SQLITE_BATCH if database.is_sqlite else 200)
        self.idle_wait = idle_wait

    async def read(self) -> list[Entry]:
        async with self.database.read() as conn:
            rows = (await conn.execute(select(o).order_by(o.c.seq).limit(self.batch))).all()
        if not rows:
            await asyncio.sleep(self.idle_wait)
        return [
            Entry(
                row.seq,
                DeliveryRecord(
                    row.delivery_id,
                    row.webhook_uid,
                    row.received_at,
                    row.size,
                    Label(row.label),
                    row.identity,
                    row.duplicate_of,
                    row.payload,
                ),
            )
            for row in rows
        ]

    async def settle(self, conn: AsyncConnection, entries: Sequence[Entry]) -> None:
        await conn.execute(delete(o).where(o.c.seq.in_([e.token for e in entries])))

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        return None

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        await asyncio.sleep(self.idle_wait)  # rows stay in the table; the next read finds them
