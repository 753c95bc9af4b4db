"""The async engine, with the pragmas SQLite needs to serve concurrent readers and one writer.

SQLite has one writer at a time. Left to SQLite, a writer that finds the lock taken sleeps in the
busy handler (1 ms, 2 ms, ... 100 ms steps) and can lose to the same competitor again and again,
so an ingress commit waited seconds behind the evaluator's transactions. On SQLite the process
therefore queues its own write transactions on `WriteGate` (FIFO, with an urgent lane for ingress
where it writes the store itself: an in-memory database): they take SQLite's lock in turn and
never poll for it. Other processes on the same file take `FileWriteLock`
(gateway.foundation.store.file_lock).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import URL, event, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from gateway.foundation.store.checkpoints import JOURNAL_SIZE_LIMIT, WalCheckpointer
from gateway.foundation.store.file_lock import FileWriteLock
from gateway.foundation.store.sqlite_driver import OneCallDbapi
from gateway.foundation.store.wal_mode import use_wal
from gateway.kernel.settings import SQLITE_SYNCHRONOUS, SqliteSynchronous

AfterCommit = Callable[[], Awaitable[None]]
# The writer's page cache (SQLite's default is 2 MB): an evaluator's batch of 1,024 deliveries
# writes ~6 MB of pages; with 2 MB, SQLite spilled dirty pages to the log before the commit and
# read the indexes' pages again in the next transaction. At most this much memory per process,
# filled as pages are touched (an HTTP worker that seldom writes fills little of it).
WRITER_CACHE_KIB = 32 * 1024
WRITER_OVERFLOW = 2  # connections beside the writer's own, for a nested transaction
POSTGRES_TRANSACTIONS = "READ COMMITTED"
_AFTER_COMMIT = "gateway.after_commit"


class WriteGate:
    """An asyncio lock handed over in order, urgent waiters first; re-entrant per task."""

    def __init__(self) -> None:
        self._owner: asyncio.Task[Any] | None = None
        self._locked = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def hold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        task = asyncio.current_task()
        if self._locked and task is not None and self._owner is task:
            yield  # nested transaction of the holder: it already has its turn
            return
        await self._acquire(urgent)
        self._owner = task
        try:
            yield
        finally:
            self._owner = None
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        if not self._locked and not self._urgent and not self._normal:
            self._locked = True
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(future)
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():
                self._release()  # handed the lock, then cancelled: pass it on
            else:
                with suppress(ValueError):
                    queue.remove(future)
            raise

    def _release(self) -> None:
        for queue in (self._urgent, self._normal):
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)  # still locked: the waiter owns it now
                    return
        self._locked = False


class Database:
    """Owns the engine; `transaction()` is the unit of work for domain code."""

    def __init__(
        self,
        engine: AsyncEngine,
        writer: AsyncEngine | None = None,
        *,
        synchronous: SqliteSynchronous = "full",
    ) -> None:
        self.engine = engine  # reads; and writes, but for a SQLite file
        # SQLite file: this process's write transactions, on one connection (`writer_engine`)
        self.writer = writer if writer is not None else engine
        # SQLite: PRAGMA synchronous of every connection (GATEWAY_SQLITE_SYNCHRONOUS)
        self.synchronous = synchronous
        # SQLite: this process's write transactions take turns here instead of in busy_timeout
        self.write_gate: WriteGate | None = WriteGate() if self.is_sqlite else None
        self._checkpointer: WalCheckpointer | None = None
        # SQLite file: and across this deployment's processes (see
        # gateway.foundation.store.file_lock)
        path = self.sqlite_file
        self.file_lock = FileWriteLock(path) if path is not None else None

    @property
    def sqlite_file(self) -> str | None:
        """The SQLite database file, when the store is one (not in memory)."""
        return sqlite_file(self.engine.url)

    @property
    def engines(self) -> tuple[AsyncEngine, ...]:
        """Each engine once: the pool's, and the writer's when it has one of its own."""
        return (self.engine,) if self.writer is self.engine else (self.engine, self.writer)

    @property
    def background_checkpoints(self) -> bool:
        return self._checkpointer is not None

    def start_background_checkpoints(self) -> None:
        """SQLite file: checkpoint the WAL on a thread of its own from now on; connections
        opened afterwards leave it to that thread (see `gateway.foundation.store.checkpoints`)."""
        path = self.sqlite_file
        if path is None or self._checkpointer is not None:
            return
        self._checkpointer = WalCheckpointer(path)
        self._checkpointer.start()

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @asynccontextmanager
    async def transaction(self, *, urgent: bool = False) -> AsyncIterator[AsyncConnection]:
        """`urgent`: on SQLite, ahead of this process's other waiting writers (ingress). What
        the transaction's work asked for with `after_commit` runs once it has committed."""
        callbacks: list[AfterCommit] = []
        async with self._begin(urgent) as conn:
            # the dict itself: once a statement is cancelled the connection is invalidated and
            # `conn.info` raises, which would replace the cancellation with an error
            info = conn.info
            info[_AFTER_COMMIT] = callbacks
            try:
                yield conn
            finally:
                info.pop(_AFTER_COMMIT, None)
        for callback in callbacks:
            await callback()

    @asynccontextmanager
    async def _begin(self, urgent: bool) -> AsyncIterator[AsyncConnection]:
        if self.write_gate is None:  # PostgreSQL: in autocommit but for transactions
            async with self.engine.connect() as conn:
                await conn.execution_options(isolation_level=POSTGRES_TRANSACTIONS)
                async with conn.begin():
                    yield conn
            return
        async with self.write_gate.hold(urgent=urgent):
            if self.file_lock is None:
                async with self.writer.begin() as conn:
                    yield conn
                return
            async with self.file_lock.held_async(), self.writer.begin() as conn:
                yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reading: each statement sees what was committed when it started
        (no transaction around them; writes belong in `transaction()`)."""
        async with self.engine.connect() as conn:
            yield conn

    async def close(self) -> None:
        await self.engine.dispose()
        if self.writer is not self.engine:
            await self.writer.dispose()
        if self.file_lock is not None:
            self.file_lock.close()
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
            self._checkpointer = None

    def on_connect(self, dbapi_connection: Any, _record: Any = None) -> None:
        """Pragmas for every new SQLite connection of this process (see `sqlite_pragmas`)."""
        checkpoints = self.background_checkpoints
        sqlite_pragmas(
            dbapi_connection,
            _record,
            background_checkpoints=checkpoints,
            synchronous=self.synchronous,
        )

    def on_writer_connect(self, dbapi_connection: Any, _record: Any = None) -> None:
        """The writer's pragmas: every connection's, and its larger page cache."""
        self.on_connect(dbapi_connection, _record)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        cursor.close()


def after_commit(conn: AsyncConnection, callback: AfterCommit) -> None:
    """Run `callback` once the transaction of `conn` (a `Database.transaction`) has committed:
    what others must hear of a change (ingress caches) only after it is visible to them."""
    try:
        conn.info[_AFTER_COMMIT].append(callback)
    except KeyError:
        raise RuntimeError("after_commit: not inside Database.transaction()") from None


# PRAGMA synchronous by GATEWAY_SQLITE_SYNCHRONOUS's values (a KeyError for any other: no text
# of a caller's reaches the PRAGMA)
SYNCHRONOUS: dict[str, str] = {value: value.upper() for value in SQLITE_SYNCHRONOUS}


def create_database(
    url: str, *, synchronous: SqliteSynchronous = "full", **engine_options: Any
) -> Database:
    """`synchronous`: a SQLite store's PRAGMA synchronous (`full`: a commit is on disk when it
    returns; `normal`: it may be lost to a power loss), ignored on PostgreSQL."""
    if url.startswith("sqlite"):
        path = sqlite_file(url)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        options = {"connect_args": {"timeout": 30}, "module": OneCallDbapi(), **engine_options}
        engine = create_async_engine(url, **options)
        writer = writer_engine(url, options) if path is not None else None
        database = Database(engine, writer, synchronous=synchronous)
        event.listen(engine.sync_engine, "connect", database.on_connect)
        if writer is not None:
            event.listen(writer.sync_engine, "connect", database.on_writer_connect)
        return database
    else:
        engine_options.setdefault("pool_size", 10)
        engine_options.setdefault("max_overflow", 20)
        engine_options.setdefault("pool_pre_ping", True)
        # the connection returned last goes out first: a process's statements stay on the few
        # connections it keeps busy, where asyncpg's prepared statements (one per statement text
        # and connection) are already made; handed out in turn, every pooled connection prepared
        # the evaluator's multi-row INSERTs again (~8 µs a delivery, docs/performance.md)
        engine_options.setdefault("pool_use_lifo", True)
        # Reads (`Database.read`) run in autocommit, transactions in READ COMMITTED, which is
        # PostgreSQL's default and takes a fresh snapshot per statement anyway: a read is no
        # BEGIN and ROLLBACK around its statements, and the pool's ping no BEGIN and ROLLBACK
        # around its own (asyncpg). A read() went from six round trips to two.
        engine_options.setdefault("isolation_level", "AUTOCOMMIT")
        engine = create_async_engine(url, **engine_options)
    return Database(engine)


def sqlite_file(url: str | URL) -> str | None:
    """The SQLite database file a store URL names (as given: relative to the current
    directory); None for another database, or one in memory (`:memory:`, a `file:` URI, or
    `mode=memory`). The one rule: the store's writer and checkpoints, the outbox and the CLI's
    check for a missing store all ask it."""
    url = make_url(url)
    name = url.database or ""
    if not url.drivername.startswith("sqlite") or name in ("", ":memory:"):
        return None
    if name.startswith("file:") or url.query.get("mode") == "memory":
        return None
    return name


def writer_engine(url: str, options: dict[str, Any]) -> AsyncEngine:
    """A SQLite file's engine for this process's write transactions: one connection (they
    take turns on `WriteGate` anyway; a nested one gets a second), with a page cache of
    WRITER_CACHE_KIB. A connection's page cache lasts from one transaction to the next only
    while no other connection wrote in between: from a pool of several, every transaction
    found its cache emptied by the previous one's commit on another connection and read its
    pages again. Not for an in-memory store, whose connections must be the pool's own."""
    options = {**options, "pool_size": 1, "max_overflow": WRITER_OVERFLOW}
    return create_async_engine(url, **options)


def sqlite_pragmas(
    dbapi_connection: Any,
    _record: Any = None,
    *,
    background_checkpoints: bool = False,
    synchronous: SqliteSynchronous = "full",
) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    use_wal(cursor)
    # WAL: FULL syncs the log at each commit; NORMAL only at checkpoints (durable against a
    # process kill, not a power loss)
    cursor.execute(f"PRAGMA synchronous={SYNCHRONOUS[synchronous]}")
    cursor.execute("PRAGMA foreign_keys=ON")
    if background_checkpoints:
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        # the checkpointer restarts the log in place; a restart's first commit cuts a longer
        # file back to this (gateway.foundation.store.checkpoints)
        cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    cursor.close()
