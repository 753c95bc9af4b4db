"""Embedded source: accepted deliveries the log holds as pending (written there before the 202).

The oldest pending rows are read; the batch transaction claims them (pending -> evaluated), so a
row is evaluated once even if another process reads it too. The consumer plans the next batch
while one is being written, so reads continue after the last row read (rows in flight are not
read twice); once caught up, the next read starts from the oldest again (a row committed late
with an earlier time, a batch that failed). The ingress writer wakes the source after each
commit, so a delivery waits for no poll interval; with nothing to do the source still looks
every `idle_wait` seconds (rows another process wrote). After a read that did not fill a batch,
the next one waits until `linger` seconds have passed: an evaluator beside ingress in one
process would otherwise run a batch per ingress commit, a handful of rows each, and spend its
time (and the event loop's) on per-batch statements.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.domain import delivery_log
from gateway.domain.delivery_trace import TraceWrites
from gateway.store import Database
from gateway.worker.delivery_consumer import Claim, Entry


class PendingSource:
    def __init__(
        self,
        database: Database,
        *,
        batch: int = 256,
        idle_wait: float = 0.5,
        linger: float = 0.0,
        wake: asyncio.Event | None = None,
        on_evaluated: Callable[[int], None] | None = None,
    ) -> None:
        self.database = database
        self.batch = batch
        self.idle_wait = idle_wait
        self.linger = linger
        self._not_before = 0.0  # loop time before which the next read waits (linger)
        self.wake = wake or asyncio.Event()
        self._on_evaluated = on_evaluated
        self._claimed = 0
        self._after: delivery_log.Position | None = None
        self._in_flight: set[str] = set()

    async def read(self) -> list[Entry]:
        loop = asyncio.get_running_loop()
        if (wait := self._not_before - loop.time()) > 0:
            await asyncio.sleep(wait)
        self.wake.clear()
        async with self.database.read() as conn:
            records = await delivery_log.read_pending(conn, self.batch, self._after)
        if len(records) < self.batch:
            self._not_before = loop.time() + self.linger
        fresh = [r for r in records if r.delivery_id not in self._in_flight]
        if records:
            self._after = (records[-1].received_at, records[-1].delivery_id)
        elif self._after is not None:
            self._after = None  # caught up: from the oldest again, at once
            return []
        if not fresh:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.idle_wait)
            return []
        self._in_flight.update(r.delivery_id for r in fresh)
        return [Entry(None, record) for record in fresh]

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        wanted = [e.record.delivery_id for e in entries]

        async def claim(conn: AsyncConnection) -> set[str]:
            claimed = await delivery_log.claim_pending(conn, wanted)
            self._claimed = len(claimed)
            return claimed

        return claim

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        if self._on_evaluated is not None and self._claimed:
            self._on_evaluated(self._claimed)
        self._claimed = 0

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        self._claimed = 0
        self._after = None  # rows stay pending; a read from the oldest finds them
        await asyncio.sleep(self.idle_wait)
