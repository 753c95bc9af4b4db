"""Outbox source: accepted deliveries waiting in the embedded default's outbox file
(`gateway.backends.outbox`), read in append order.

The batch transaction moves the batch into the store's delivery log (`claim`: a delivery the log
holds already was evaluated before and is skipped, so no second run), the same claim as the Redis
stream source's. Nothing is written to the outbox from here: ingress deletes what the log holds.
The consumer plans the next batch while one is being written, so reads continue after the last
row read; a failed batch rewinds the position so its rows are read again. A new source (a
restart) starts from the oldest row still there. The ingress writer wakes an evaluator in its
own process after each commit; one in a process of its own looks every `idle_wait` seconds when
idle. After a read that did not fill a batch, the next one waits until `linger` seconds have
passed (an evaluator sharing the event loop with ingress would otherwise run a batch of a
handful of rows per ingress commit).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.contract import Label
from gateway.backends.outbox import Outbox
from gateway.domain import delivery_log
from gateway.domain.delivery_trace import TraceWrites
from gateway.worker.delivery_consumer import Claim, Entry


class OutboxSource:
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
        self.outbox = outbox
        self.batch = batch
        self.idle_wait = idle_wait
        self.linger = linger
        self.wake = wake or asyncio.Event()
        self._on_evaluated = on_evaluated
        self._not_before = 0.0  # loop time before which the next read waits (linger)
        self._after = 0  # the last seq read
        self._in_flight: set[str] = set()
        self._claimed = 0

    async def read(self) -> list[Entry]:
        loop = asyncio.get_running_loop()
        if (wait := self._not_before - loop.time()) > 0:
            await asyncio.sleep(wait)
        self.wake.clear()
        rows = await self.outbox.read(self._after, self.batch)
        if len(rows) < self.batch:
            self._not_before = loop.time() + self.linger
        if rows:
            self._after = rows[-1][0]
        fresh = [Entry(seq, r) for seq, r in rows if r.delivery_id not in self._in_flight]
        if not fresh:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.idle_wait)
            return []
        self._in_flight.update(e.record.delivery_id for e in fresh)
        return fresh

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

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        if self._on_evaluated is not None and self._claimed:
            self._on_evaluated(self._claimed)
        self._claimed = 0

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        self._claimed = 0
        if entries:  # read again from before the first of them
            self._after = min(self._after, min(int(e.token) for e in entries) - 1)
        await asyncio.sleep(self.idle_wait)
