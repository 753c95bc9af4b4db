"""Embedded durable log: delivery rows written to SQL with group commit.

Concurrent requests queue their rows; one writer task inserts everything queued in one
transaction (one executemany) and only then resolves the callers' futures, so a 202 follows a
committed row while throughput stays near one commit per event-loop turn rather than one per
request. Accepted deliveries go in as "pending": the log is also the evaluator's queue, and
`committed` wakes it after each commit.

On a SQLite file the writer has its own connection on its own thread: a commit costs one thread
hop, never waits for a pooled connection, and takes the process's write gate (see
`gateway.store.db`) in the urgent lane, so it goes next whenever the evaluator's transaction ends.
Against the deployment's other processes (the evaluator's) it takes the file write lock (see
`gateway.store.file_lock`) around each commit, so it waits for at most one of their
transactions, woken as soon as that ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.pool import StaticPool

from gateway.backends.contract import DeliveryRecord
from gateway.backends.delivery_rows import DELIVERIES, PENDING, delivery_row
from gateway.store import Database
from gateway.store.file_lock import FileWriteLock

log = logging.getLogger("gateway.ingress")

Pending = tuple[dict[str, Any], asyncio.Future[None] | None]


class _SqliteAppender:
    """One synchronous connection to the same file, used only from one dedicated thread."""

    def __init__(self, database: Database) -> None:
        url = database.engine.url.set(drivername="sqlite")
        self._engine: Engine = create_engine(
            url,
            poolclass=StaticPool,
            connect_args={"timeout": 30, "check_same_thread": False},
        )
        event.listen(self._engine, "connect", database.on_connect)
        self._conn: Connection | None = None
        assert database.sqlite_file is not None
        self._file_lock = FileWriteLock(database.sqlite_file)  # an open file of its own
        self._statement = DELIVERIES.sql(self._engine.dialect, 0)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="delivery-log")

    def append(self, rows: list[dict[str, Any]]) -> None:
        values = DELIVERIES.encode(self._engine.dialect, rows)
        if self._conn is None:
            self._conn = self._engine.connect()
        conn = self._conn
        try:
            with self._file_lock.held():
                conn.exec_driver_sql(self._statement, values)
                conn.commit()  # returns once SQLite committed (WAL: survives a process kill)
        except BaseException:
            try:
                conn.rollback()
            except Exception:  # a broken connection: open a new one next time
                self._drop()
            raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken; nothing left to release
                conn.close()

    def close(self) -> None:
        self._drop()
        self._engine.dispose()
        self._file_lock.close()


def _dedicated_file(database: Database) -> bool:
    """A SQLite file another connection can open (not `:memory:`), through aiosqlite."""
    url = database.engine.url
    name = url.database or ""
    return (
        database.is_sqlite
        and url.drivername == "sqlite+aiosqlite"
        and name not in ("", ":memory:")
        and not name.startswith("file:")
        and "mode=memory" not in str(url)
    )


class DeliveryWriter:
    def __init__(self, database: Database, *, max_batch: int = 1000) -> None:
        self._database = database
        self._max_batch = max_batch
        self._queue: list[Pending] = []
        self._wake = asyncio.Event()
        self.committed = asyncio.Event()  # set after every commit (the evaluator waits on it)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._appender = _SqliteAppender(database) if _dedicated_file(database) else None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="delivery-log-writer")

    async def write(self, record: DeliveryRecord) -> None:
        """Logs an accepted delivery as pending; returns once the row is committed, raises when
        the commit failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((delivery_row(record, PENDING), future))
        self._wake.set()
        await asyncio.shield(future)

    def write_later(self, record: DeliveryRecord) -> None:
        """Metadata-only records (rejections) ride along with the next batch; nobody waits."""
        self._queue.append((delivery_row(record, None), None))
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._drain()
            if self._closing:
                return
            await self._wake.wait()
            self._wake.clear()

    async def _drain(self) -> None:
        while self._queue:
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
            await self._commit(batch)

    async def _commit(self, batch: list[Pending]) -> None:
        rows = [row for row, _ in batch]
        try:
            await asyncio.shield(self._insert(rows))  # a cancelled writer still finishes a commit
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

    async def _insert(self, rows: list[dict[str, Any]]) -> None:
        appender = self._appender
        if appender is None:
            async with self._database.transaction() as conn:
                await DELIVERIES.insert(conn, rows)
            return
        gate = self._database.write_gate
        assert gate is not None
        async with gate.hold(urgent=True):
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(appender.executor, appender.append, rows)

    async def close(self) -> None:
        """Commit what is queued (the writer finishes its batch, never cancelled mid-commit)."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drain()
        if self._appender is not None:
            appender, self._appender = self._appender, None
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(appender.executor, appender.close)
            appender.executor.shutdown(wait=True)
