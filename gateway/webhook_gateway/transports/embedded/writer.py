"""Embedded durable log: accepted deliveries written with group commit.

Concurrent requests queue their rows; one writer task inserts everything queued in one
transaction (one executemany) and only then resolves the callers' futures, so a 202 follows a
committed row while throughput stays near one commit per event-loop turn rather than one per
request (batches form while the previous commit runs). `committed` wakes an evaluator in this
process after each commit.

On a SQLite file the rows go to the outbox (`gateway.webhook_gateway.transports.outbox.file`), a
file of its own whose only writer is this writer: a commit never waits for the evaluator's
transactions on the store. Commits that wait for the disk (GATEWAY_SQLITE_SYNCHRONOUS=full, the
default) run on a thread of its own, so the event loop goes on answering meanwhile, at most one
every SYNC_INTERVAL_S (the rows that arrive in between share its sync); without that sync, small
batches commit on the event loop and large ones (THREAD_APPEND_BYTES) on the thread. Every
PRUNE_EVERY_S, on that thread, it deletes the outbox rows the evaluator has moved into the store,
a slice at a time between commits (`outbox.PRUNE_SLICE`); it also reads there what the
de-duplication memory looks up (`first_copies`). On other stores (PostgreSQL, an in-memory
SQLite) accepted deliveries go into the delivery log itself as "pending", the evaluator's queue
there.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.delivery_rows import DELIVERIES, PENDING, delivery_row
from gateway.foundation.backends.first_copies import Wanted, first_since
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.kernel.event_waits import wait_event
from gateway.webhook_gateway.transports.outbox import file as outbox

log = logging.getLogger("gateway.ingress")

# a row waiting for the writer: beside a SQLite file an outbox row (outbox.row_of), else a
# delivery-log row (delivery_row); and the future of the caller waiting for its commit, if any
Row = Any
Pending = tuple[Row, asyncio.Future[None] | None]
PRUNE_EVERY_S = 0.5
# A batch whose payloads add up to this many bytes is appended on the outbox thread, not on the
# event loop: with 200 KB bodies, appended on the loop, ingress answered 9 % fewer requests at a
# 30 % higher p99 than with the thread (SQLite copies each body, and the loop waited for it);
# with 1 KB bodies the thread cost ~15 µs of CPU a delivery more (docs/performance.md)
THREAD_APPEND_BYTES = 128 * 1024
# the outbox thread runs Python too (it encodes each batch): by default the loop may wait 5 ms for
# the GIL it holds; 1 ms took ~6 ms off the embedded ingress p99 at 64 connections
# (docs/performance-history.md)
GIL_SWITCH_S = 0.001
# synced commits start at most this often: a sync costs ~80 µs of CPU on a small VM, and one
# per batch of one or two deliveries cost embedded ingress a third of its rate
# (docs/performance.md, "The outbox's commits wait for the disk"); a 202 under load waits up
# to this much more
SYNC_INTERVAL_S = 0.002
_SQLITE = sqlite.dialect()


class DeliveryWriter:
    def __init__(self, database: Database, *, max_batch: int = 1000) -> None:
        self._database = database
        self._max_batch = max_batch
        self._queue: list[Pending] = []
        self._wake = asyncio.Event()
        self.committed = asyncio.Event()  # set after every commit (the evaluator waits on it)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._appender: outbox.OutboxAppender | None = None
        self._lookups: outbox.OutboxLookups | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._next_prune = 0.0
        self._prune_after: int | None = None  # the seq the next slice starts after, in a round
        self._last_sync = 0.0  # when the last commit that waits for the disk began
        path = outbox.outbox_path(database)
        if path is not None:
            assert database.sqlite_file is not None
            self._appender = outbox.OutboxAppender(path, database.synchronous)
            self._lookups = outbox.OutboxLookups(path, database.sqlite_file)
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="outbox")

    def start(self) -> None:
        if self._executor is not None:
            sys.setswitchinterval(GIL_SWITCH_S)  # for the whole process: the loop's turns
        self._task = asyncio.create_task(self._run(), name="delivery-log-writer")

    async def write(self, record: DeliveryRecord) -> None:
        """Logs an accepted delivery as pending; returns once the row is committed, raises when
        the commit failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((self._row(record, PENDING), future))
        self._wake.set()
        # the caller's own future, not shielded: a cancelled caller cancels it, and the writer
        # (which skips futures already done) commits the row all the same
        await future

    def write_later(self, record: DeliveryRecord) -> None:
        """Metadata-only records (rejections) ride along with the next batch; nobody waits."""
        self._queue.append((self._row(record, None), None))
        self._wake.set()

    def _row(self, record: DeliveryRecord, evaluation: str | None) -> Row:
        if self._appender is not None:  # the outbox has no evaluation: all of it is pending
            return outbox.row_of(record)
        return delivery_row(record, evaluation)

    async def _run(self) -> None:
        while True:
            await self._drain()
            if self._closing:
                return
            await self._prune_slice()
            if self._queue or self._prune_after is not None:
                continue  # commits first, then the round's next slice
            if self._appender is None:
                await self._wake.wait()
            else:  # pruning needs a turn now and then, load or not
                await wait_event(self._wake, PRUNE_EVERY_S)
            self._wake.clear()

    async def _prune_slice(self) -> None:
        """One slice of the prune round in progress, or of a new one when it is due."""
        if self._appender is None or self._lookups is None:
            return
        if self._prune_after is None:
            if time.monotonic() < self._next_prune:
                return
            self._next_prune = time.monotonic() + PRUNE_EVERY_S
            self._prune_after = 0
        try:
            pruned = await self._on_thread(_prune, self._lookups, self._appender, self._prune_after)
            self._prune_after = pruned.resume_after
        except Exception as exc:  # the next round tries again; rows stay until then
            self._prune_after = None
            log.warning("outbox prune failed: %s", exc)

    async def _on_thread(self, call: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, call, *args)

    async def _drain(self) -> None:
        while self._queue:
            await self._sync_pause()
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
            await self._commit(batch)
            # under sustained load the queue never empties: pruned only once it did, the outbox
            # grew by the whole load, and look-ups that must read it slowed ingress to a stall
            await self._prune_slice()

    async def _sync_pause(self) -> None:
        """Commits that wait for the disk start at most every SYNC_INTERVAL_S: the rows that
        arrive meanwhile share the next one's sync."""
        appender = self._appender
        if appender is None or not appender.syncs or self._closing:
            return
        wait = self._last_sync + SYNC_INTERVAL_S - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._last_sync = time.monotonic()

    async def _commit(self, batch: list[Pending]) -> None:
        rows = [row for row, _ in batch]
        try:
            if not self._appended_on_loop(rows):
                await asyncio.shield(self._insert(rows))  # a cancelled writer still commits
        except Exception as exc:  # every waiter learns of it and answers 503
            log.error("delivery log commit of %d rows failed: %s", len(batch), exc)
            for _, future in batch:
                if future is not None and not future.done():
                    future.set_exception(exc)
            return
        for _, future in batch:
            if future is not None and not future.done():
                future.set_result(None)
        self.committed.set()

    def _appended_on_loop(self, rows: list[Row]) -> bool:
        """Appends a batch of small payloads to the outbox here, on the event loop, when its
        commit does not wait for the disk (nor for a lock: OutboxAppender), and says so. No
        await, no task: nothing can cancel it midway, and the commit goes out in this turn of
        the loop."""
        appender = self._appender
        if appender is None or appender.syncs or _payload_bytes(rows) >= THREAD_APPEND_BYTES:
            return False
        appender.append(rows)
        return True

    async def _insert(self, rows: list[Row]) -> None:
        appender = self._appender
        if appender is None:
            async with self._database.transaction(urgent=True) as conn:
                await DELIVERIES.insert(conn, rows)
            return
        # large: the loop goes on with other requests while SQLite copies the bytes
        await self._on_thread(appender.append, rows)

    async def first_copies(self, wanted: Sequence[Wanted]) -> list[str | None]:
        """The delivery id of the first accepted copy of each, or None (for FirstCopies): on
        a SQLite file on this writer's thread, its connections (no pool, no thread per query),
        the outbox too; elsewhere in one query on a pooled connection, from the log alone."""
        if self._lookups is not None:
            found: list[str | None] = await self._on_thread(_first_copies, self._lookups, wanted)
            return found
        async with self._database.read() as conn:
            return await _firsts_in_log(conn, wanted)

    async def close(self) -> None:
        """Commit what is queued (the writer finishes its batch, never cancelled mid-commit)."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drain()
        if self._lookups is not None and self._executor is not None:
            lookups, self._lookups = self._lookups, None
            await self._on_thread(lookups.close)
            self._executor.shutdown(wait=True)
        if self._appender is not None:
            appender, self._appender = self._appender, None
            appender.close()


def _payload_bytes(rows: list[Row]) -> int:
    """Of outbox rows."""
    return sum(len(row[outbox.PAYLOAD] or b"") for row in rows)


def _prune(
    lookups: outbox.OutboxLookups, appender: outbox.OutboxAppender, after: int
) -> outbox.PruneSlice:
    """On the outbox thread, the writer's commits waiting meanwhile: deleting large rows (and
    the checkpoint a commit may run) would hold up the event loop."""
    pruned = lookups.moved_slice(after)
    appender.delete(pruned.moved)
    return pruned


def _first_copies(lookups: outbox.OutboxLookups, wanted: Sequence[Wanted]) -> list[str | None]:
    encode = DELIVERIES.encoder(_SQLITE, "received_at")
    return lookups.first_copies(
        [(w.webhook_uid, w.identity, encode(w.since), encode(w.outbox_until)) for w in wanted]
    )


async def _firsts_in_log(conn: AsyncConnection, wanted: Sequence[Wanted]) -> list[str | None]:
    """One query for the batch: every accepted copy of its keys, by ix_deliveries_identity (a
    key has a few copies at most); the window is applied here. With a time condition in the
    query, or the keys as a row-value IN list, SQLite read the log by time instead: all of it."""
    d = t.deliveries
    keys = sorted({(w.webhook_uid, w.identity) for w in wanted})
    query = select(d.c.webhook_uid, d.c.identity, d.c.delivery_id, d.c.received_at).where(
        or_(*(and_(d.c.webhook_uid == uid, d.c.identity == identity) for uid, identity in keys)),
        d.c.label == Label.ACCEPTED.value,
    )
    copies: dict[tuple[str, str], list[tuple[str, datetime]]] = {}
    for uid, identity, delivery_id, received in await conn.execute(query):
        copies.setdefault((uid, identity), []).append((delivery_id, received))
    for found in copies.values():
        found.sort(key=lambda copy: (copy[1], copy[0]))  # oldest first
    return [first_since(copies.get((w.webhook_uid, w.identity), ()), w.since) for w in wanted]
