"""The delivery consumer: one SQL transaction per batch, acknowledged only after it commits."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.base import DeliveryRecord
from gateway.domain import deliveries
from gateway.services import Services

log = logging.getLogger("gateway.worker")

PRUNE_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class Entry:
    token: Any  # where the entry lives in its source (stream + id, outbox seq)
    record: DeliveryRecord


class Source(Protocol):
    async def read(self) -> list[Entry]:
        """The next entries; waits a little when there are none."""
        ...

    async def settle(self, conn: AsyncConnection, entries: Sequence[Entry]) -> None:
        """Inside the batch transaction (the outbox deletes its rows here)."""
        ...

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        """After the commit (the stream acknowledges and deletes its entries here)."""
        ...

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        """A batch failed: make sure these entries are read again."""
        ...


class Consumer:
    def __init__(
        self, services: Services, source: Source, starter: deliveries.Starter | None = None
    ) -> None:
        self.services = services
        self.source = source
        self.starter = starter
        self.processed = 0
        self._next_prune = time.monotonic() + 5.0

    async def run(self) -> None:
        log.info("delivery consumer started (%s)", type(self.source).__name__)
        while True:
            try:
                entries = await self.source.read()
                if entries:
                    await self.process(entries)
                await self._maybe_prune()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep consuming: Redis or SQL may be back in a moment
                log.warning("delivery consumer: %s; retrying in 1 s", exc, exc_info=True)
                await asyncio.sleep(1.0)

    async def process(self, entries: Sequence[Entry]) -> None:
        try:
            await self._commit(entries)
        except Exception:
            if len(entries) == 1:
                await self.source.retry_later(entries)
                raise
            # isolate a poison entry: the others must not wait behind it
            for entry in entries:
                try:
                    await self._commit([entry])
                except Exception as exc:
                    log.error("delivery %s not logged yet: %s", entry.record.delivery_id, exc)
                    await self.source.retry_later([entry])

    async def _commit(self, entries: Sequence[Entry]) -> None:
        started = time.monotonic()
        async with self.services.database.transaction() as conn:
            inserted = await deliveries.store_records(
                conn, self.services, [e.record for e in entries], self.starter
            )
            await self.source.settle(conn, entries)
        await self.source.acknowledge(entries)
        self.processed += len(entries)
        oldest = min(e.record.received_at for e in entries).timestamp()
        log.info(
            "delivery consumer: batch of %d (%d new) in %.1f ms, lag %.2f s",
            len(entries),
            len(inserted),
            (time.monotonic() - started) * 1000,
            time.time() - oldest,
        )

    async def _maybe_prune(self) -> None:
        if time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + PRUNE_EVERY_S
        async with self.services.database.transaction() as conn:
            removed = await deliveries.prune(conn)
        if removed:
            log.info("delivery log: pruned %d records past retention", removed)
