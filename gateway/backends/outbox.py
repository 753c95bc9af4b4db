"""Embedded durable log: the SQL `ingress_outbox` table, written with group commit.

Concurrent requests queue their rows; one writer task inserts everything queued in one
transaction and only then resolves the callers' futures, so a 202 follows a committed row while
throughput stays near one commit per event-loop turn rather than one per request.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

from sqlalchemy import insert

from gateway.backends.base import DeliveryRecord
from gateway.store import Database
from gateway.store import tables as t

log = logging.getLogger("gateway.ingress")


def record_row(record: DeliveryRecord) -> dict[str, Any]:
    row = asdict(record)
    row["label"] = record.label.value
    return row


class OutboxWriter:
    def __init__(self, database: Database, *, max_batch: int = 500) -> None:
        self._database = database
        self._max_batch = max_batch
        self._queue: list[tuple[dict[str, Any], asyncio.Future[None] | None]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ingress-outbox-writer")

    async def write(self, record: DeliveryRecord) -> None:
        """Return once the row is committed; raise when the commit failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((record_row(record), future))
        self._wake.set()
        await asyncio.shield(future)

    def write_later(self, record: DeliveryRecord) -> None:
        """Metadata-only records (rejections) ride along with the next batch; nobody waits."""
        self._queue.append((record_row(record), None))
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                await self._commit(batch)

    async def _commit(
        self, batch: list[tuple[dict[str, Any], asyncio.Future[None] | None]]
    ) -> None:
        try:
            async with self._database.transaction() as conn:
                await conn.execute(insert(t.ingress_outbox), [row for row, _ in batch])
        except Exception as exc:  # every waiter learns of it and answers 503
            log.error("outbox commit of %d rows failed: %s", len(batch), exc)
            for _, future in batch:
                if future is not None and not future.done():
                    future.set_exception(exc)
            return
        for _, future in batch:
            if future is not None and not future.done():
                future.set_result(None)

    async def close(self) -> None:
        if self._queue:
            batch, self._queue = self._queue, []
            await self._commit(batch)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
