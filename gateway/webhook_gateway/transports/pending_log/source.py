"""Embedded source: accepted deliveries the log holds as pending (written there before the 202).

The oldest pending rows are read; the batch transaction claims them (pending -> evaluated), so a
row is evaluated once even if another process reads it too. The consumer plans the next batch
while one is being written, so reads continue after the last row read (rows in flight are not
read twice); once caught up, the next read starts from the oldest again (a row committed late
with an earlier time, a batch that failed). The ingress writer wakes the source after each
commit, so a delivery waits for no poll interval; with nothing to do the source still looks
every `idle_wait` seconds (rows another process wrote). `PolledSource`: that and the linger after
a short read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import Database
from gateway.kernel.event_waits import pause
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.trace import TraceWrites
from gateway.webhook_gateway.transports.contract import Claim, Entry
from gateway.webhook_gateway.transports.polled import (
    INLINE_BATCH,
    INLINE_LINGER_S,
    WORKER_POLL_S,
    BesideIngress,
    PolledSource,
)


class PendingSource(PolledSource):
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
        super().__init__(
            batch=batch, idle_wait=idle_wait, linger=linger, wake=wake, on_evaluated=on_evaluated
        )
        self.database = database
        self._after: delivery_log.Position | None = None

    async def read(self) -> list[Entry]:
        await self._before_read()
        async with self.database.read() as conn:
            records = await delivery_log.read_pending(conn, self.batch, self._after)
        self._after_read(len(records))
        fresh = [Entry(None, r) for r in records if not self._is_in_flight(r.delivery_id)]
        if records:
            self._after = (records[-1].received_at, records[-1].delivery_id)
        elif self._after is not None:
            self._after = None  # caught up: from the oldest again, at once
            return []
        return self._take(fresh) if fresh else await self._idle()

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        wanted = [e.record.delivery_id for e in entries]

        async def claim(conn: AsyncConnection) -> set[str]:
            claimed = await delivery_log.claim_pending(conn, wanted)
            self._claimed = len(claimed)
            return claimed

        return claim

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._release(entries)
        self._after = None  # rows stay pending; a read from the oldest finds them
        await pause(self.idle_wait)


# rows per transaction of a worker of its own. On the same SQLite file (an in-memory one has no
# other process) ingress's commits wait for each of its transactions (one writer per file), so
# they stay short; on PostgreSQL they need not.
WORKER_BATCH_SQLITE = 128
WORKER_BATCH = 1024


def evaluator_source(database: Database, beside: BesideIngress | None) -> PendingSource:
    """Beside this process's ingress: woken by its commits, its backlog count kept. Otherwise
    another process writes the log: look for its rows."""
    if beside is None:
        batch = WORKER_BATCH_SQLITE if database.is_sqlite else WORKER_BATCH
        return PendingSource(database, batch=batch, idle_wait=WORKER_POLL_S)
    return PendingSource(
        database,
        batch=INLINE_BATCH,
        linger=INLINE_LINGER_S,
        wake=beside.wake,
        on_evaluated=beside.on_evaluated,
    )
