"""What the two sources that poll SQL files share (`OutboxSource`, `PendingSource`): the ids in
flight (read, not yet written), the linger after a short read, the idle wait for the ingress
writer's wake-up, and reporting how many deliveries each commit claimed.

After a read that did not fill a batch, the next one waits until `linger` seconds have passed:
an evaluator beside ingress in one process would otherwise run a batch per ingress commit, a
handful of rows each, and spend its time (and the event loop's) on per-batch statements.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.kernel.event_waits import pause, wait_event
from gateway.webhook_gateway.transports.contract import Entry

# Beside ingress in one process, rows per SQL transaction: small, and a read that found fewer
# waits INLINE_LINGER_S before the next (batches of a few rows cost the event loop per-batch
# statements).
INLINE_BATCH = 128
INLINE_LINGER_S = 0.05
# in a process of its own, the evaluator sees the rows another process wrote by looking: this
# often when idle
WORKER_POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class BesideIngress:
    """This process's ingress writer, when the evaluator runs beside it: its commits wake the
    source (`wake`), and the source reports what it claimed, which keeps ingress's backlog
    count (`on_evaluated`)."""

    wake: asyncio.Event
    on_evaluated: Callable[[int], None]


class PolledSource:
    def __init__(
        self,
        *,
        batch: int,
        idle_wait: float,
        linger: float,
        wake: asyncio.Event | None,
        on_evaluated: Callable[[int], None] | None,
    ) -> None:
        self.batch = batch
        self.idle_wait = idle_wait
        self.linger = linger
        self.wake = wake or asyncio.Event()
        self._on_evaluated = on_evaluated
        self._not_before = 0.0  # loop time before which the next read waits (linger)
        self._in_flight: set[str] = set()
        self._claimed = 0  # accepted deliveries the last batch transaction claimed

    async def _before_read(self) -> None:
        loop = asyncio.get_running_loop()
        if (wait := self._not_before - loop.time()) > 0:
            await pause(wait)
        self.wake.clear()

    def _after_read(self, rows: int, limit: int | None = None) -> None:
        """`limit`: what the read asked for (the batch, unless the source asked for fewer)."""
        if rows < (self.batch if limit is None else limit):
            self._not_before = asyncio.get_running_loop().time() + self.linger

    def stop_waiting(self) -> None:
        self.idle_wait = self.linger = 0.0
        self.wake.set()

    async def _idle(self) -> list[Entry]:
        """Nothing new: wait for the ingress writer's wake-up, or `idle_wait`."""
        await wait_event(self.wake, self.idle_wait)
        return []

    def _take(self, fresh: list[Entry]) -> list[Entry]:
        self._in_flight.update(e.record.delivery_id for e in fresh)
        return fresh

    def _is_in_flight(self, delivery_id: str) -> bool:
        return delivery_id in self._in_flight

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        if self._on_evaluated is not None and self._claimed:
            self._on_evaluated(self._claimed)
        self._claimed = 0

    def _release(self, entries: Sequence[Entry]) -> None:
        """A batch failed: its entries are no longer in flight, nothing was claimed."""
        self._in_flight.difference_update(e.record.delivery_id for e in entries)
        self._claimed = 0
