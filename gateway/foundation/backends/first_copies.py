"""The first copies that the de-duplication memory cannot tell about, looked up in the store in
batches.

Past the newest GATEWAY_DEDUP_MEMORY keys, the per-day Bloom filters answer MAYBE
(gateway/foundation/backends/seen_deliveries.py) and the store tells. Their false positives grow
with the day's traffic (~1 % of new keys at 870,000 keys, most of them past a few million), so under
sustained load most deliveries are looked up. One look-up per request, each on a pooled
connection, made concurrent requests open and close connections (a thread each) until ingress
stalled. So the look-ups that arrive while a batch runs form the next batch, and a batch is one
call of `find_many`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

MAX_BATCH = 500  # look-ups per call (a SQLite statement takes at most 32,766 parameters)


class Wanted(NamedTuple):
    """The first accepted delivery of `identity` at `webhook_uid` received at or after `since`.
    It can still wait in the outbox only if it was received at or before `outbox_until`."""

    webhook_uid: str
    identity: str
    since: datetime
    outbox_until: datetime


FindMany = Callable[[Sequence[Wanted]], Awaitable[list[str | None]]]


def first_since(copies: Iterable[tuple[str, Any]], since: Any) -> str | None:
    """The delivery id of the first of `copies` ((id, received), oldest first) received at or
    after `since` (times as datetimes, or as the text SQLite stores: its order is time order)."""
    return next((delivery_id for delivery_id, received in copies if received >= since), None)


class FirstCopies:
    def __init__(self, find_many: FindMany) -> None:
        self._find_many = find_many
        self._queue: list[tuple[Wanted, asyncio.Future[str | None]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def find(self, wanted: Wanted) -> str | None:
        """The first copy's delivery id, or None; raises when the store could not be read."""
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._queue.append((wanted, future))
        if self._draining is None:
            self._draining = asyncio.create_task(self._drain(), name="first-copy-lookups")
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch = self._queue[:MAX_BATCH]
                del self._queue[:MAX_BATCH]
                try:
                    found = await self._find_many([wanted for wanted, _ in batch])
                except Exception as exc:  # each waiter raises it (its request answers 503)
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), first in zip(batch, found, strict=True):
                    if not future.done():  # its request may have gone meanwhile
                        future.set_result(first)
        finally:
            self._draining = None

    async def close(self) -> None:
        if self._draining is not None:
            await asyncio.gather(self._draining, return_exceptions=True)
