"""Outbox source: accepted deliveries waiting in the embedded default's outbox file
(`gateway.webhook_gateway.transports.outbox.file`), read in append order.

The batch transaction moves the batch into the store's delivery log (`claim`: a delivery the log
holds already was evaluated before and is skipped, so no second run), the same claim as the Redis
stream source's. Nothing is written to the outbox from here: ingress deletes what the log holds.
The consumer plans the next batch while one is being written, so reads continue after the last
row read; a failed batch rewinds the position so its rows are read again. A new source (a
restart) starts from the oldest row still there. The ingress writer wakes an evaluator in its
own process after each commit; one in a process of its own looks every `idle_wait` seconds when
idle (`PolledSource`: that and the linger after a short read).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import Label
from gateway.kernel.event_waits import pause
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.trace import TraceWrites
from gateway.webhook_gateway.transports.contract import (
    Claim,
    Entry,
    first_rows_per_read,
    rows_per_read,
)
from gateway.webhook_gateway.transports.outbox.file import Outbox
from gateway.webhook_gateway.transports.polled import (
    INLINE_BATCH,
    INLINE_LINGER_S,
    WORKER_POLL_S,
    BesideIngress,
    PolledSource,
)

# bodies read per pass, as the Redis streams' (16 shards x 256 KB): large bodies mean fewer rows
# per read (from the read after the one that found them large; the first read after a start
# assumes the largest), so that a batch does not fill the evaluator's memory (1,024 of 256 KB:
# 256 MB)
READ_BYTES = 4 * 1024 * 1024


class OutboxSource(PolledSource):
    def __init__(
        self,
        outbox: Outbox,
        *,
        batch: int = 256,
        idle_wait: float = 0.1,
        linger: float = 0.0,
        wake: asyncio.Event | None = None,
        on_evaluated: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(
            batch=batch, idle_wait=idle_wait, linger=linger, wake=wake, on_evaluated=on_evaluated
        )
        self.outbox = outbox
        self._after = 0  # the last seq read
        # rows per read, lowered while bodies are large
        self.count = first_rows_per_read(batch, READ_BYTES)

    async def read(self) -> list[Entry]:
        await self._before_read()
        limit = self.count
        rows = await self.outbox.read(self._after, limit)
        self._after_read(len(rows), limit)
        if rows:
            self._after = rows[-1][0]
            self.count = rows_per_read(self.batch, READ_BYTES, [record for _, record in rows])
        fresh = [Entry(seq, r) for seq, r in rows if not self._is_in_flight(r.delivery_id)]
        return self._take(fresh) if fresh else await self._idle()

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        records = [entry.record for entry in entries]
        prepared = delivery_log.prepare_log(dialect, records, traces)
        accepted = {r.delivery_id for r in records if r.label is Label.ACCEPTED}

        async def claim(conn: AsyncConnection) -> set[str]:
            logged = await delivery_log.log_new(conn, prepared)
            self._claimed = len(logged & accepted)
            return logged

        return claim

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._release(entries)
        if entries:  # read again from before the first of them
            self._after = min(self._after, min(int(e.token) for e in entries) - 1)
        await pause(self.idle_wait)


# rows per transaction of a worker of its own: ingress never waits for its transactions (the
# outbox is a file of its own), so they can be long enough to amortise per-batch statements,
# and each commit's rewrite of the last page of every table and index it adds to. As many as
# the Redis streams' (16 x 64) on the same store: 1,024 against 512 evaluated 1.13-1.32x the
# deliveries a second for 0.80-0.93x the CPU each (docs/performance.md); an API write on SQLite
# waits for at most one such transaction (~0.1 s)
WORKER_OUTBOX_BATCH = 1024


def evaluator_source(outbox: Outbox, beside: BesideIngress | None) -> OutboxSource:
    """Beside this process's ingress: woken by its commits, its backlog count kept. Otherwise
    ingress in another process appends: look for its rows."""
    if beside is None:
        return OutboxSource(outbox, batch=WORKER_OUTBOX_BATCH, idle_wait=WORKER_POLL_S)
    return OutboxSource(
        outbox,
        batch=INLINE_BATCH,
        linger=INLINE_LINGER_S,
        wake=beside.wake,
        on_evaluated=beside.on_evaluated,
    )
