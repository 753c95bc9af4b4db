"""The ingress outbox of the embedded default: a SQLite file of its own beside the store.

SQLite lets one connection write a file at a time. With accepted deliveries written into the
store's delivery log, every ingress commit waited for whatever write transaction the evaluator
had open, and the evaluator, at idle CPU priority, could be preempted while holding the lock:
ingress p99 followed the evaluator's batches. So ingress appends to this file instead, and it is
the file's only writer (the serving process's delivery writer); it never waits for anyone's lock.

The evaluator reads the outbox in append order (`seq`) and moves each batch into the store's
delivery log in the batch transaction that starts its runs, skipping deliveries already logged
(`delivery_log.log_new`): a batch moved twice (a crash before it was noticed) starts no second run.
Ingress deletes rows the store's log already holds (`OutboxLookups.moved_slice`); a row is in
one of the two files, or briefly in both, never in neither. Until moved, the delivery log API finds
accepted deliveries here (read-your-writes), pending evaluation.

The store is attached to reading connections (`store`), so that "still waiting" means "here and
not yet in the store's log".
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from gateway.foundation.backends import identity_index
from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.first_copies import first_since
from gateway.foundation.store import Database
from gateway.foundation.store.bulk import from_sqlite_time, sqlite_time
from gateway.foundation.store.db import SYNCHRONOUS
from gateway.foundation.store.sqlite_params import bind_as_is
from gateway.foundation.store.wal_mode import use_wal
from gateway.kernel.rejections import Reason
from gateway.kernel.settings import SqliteSynchronous

bind_as_is()  # the outbox binds payloads and header blocks (bytes) and NULLs a row

SUFFIX = "-outbox"
COLUMNS = (
    *("delivery_id", "webhook_uid", "received_at", "size", "label", "identity"),
    *("duplicate_of", "payload", "reason", "headers"),
)
PAYLOAD = COLUMNS.index("payload")  # where an outbox row holds its payload
# AUTOINCREMENT: a seq is never reused, even after every row was pruned (readers keep their
# position as the last seq they read)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "delivery_id TEXT NOT NULL, webhook_uid TEXT NOT NULL, received_at TEXT NOT NULL, "
    "size INTEGER NOT NULL, label TEXT NOT NULL, identity TEXT, duplicate_of TEXT, payload BLOB, "
    "reason TEXT, headers BLOB)",
    # the delivery log API's look-up of one delivery. Ids are made in time order, so a new one
    # lands on the index's last page. Not (webhook_uid, delivery_id): a webhook's uid put each
    # append on a page of its own, and the appends of a commit on as many pages, once the
    # outbox holds more than a few hundred rows (the evaluator behind): 9-11 µs of the serving
    # process's CPU a delivery more with 3,000 held, 17-20 µs with 20,000
    # (benchmarks/outbox_append.py). So a webhook's waiting deliveries are read by a scan of
    # the outbox (`Outbox.of_webhook`)
    "CREATE UNIQUE INDEX IF NOT EXISTS outbox_delivery ON outbox (delivery_id)",
    "DROP INDEX IF EXISTS outbox_webhook",  # an outbox made before 2026-12-03 had it
)
_ROW_MARKS = f"({', '.join('?' * len(COLUMNS))})"
# rows per INSERT statement: sqlite3 releases the GIL around each statement step, and each
# release under load was a hand-off to the event loop thread and back (executemany steps once
# per row); 64 rows x 10 columns stays under SQLite's oldest parameter limit (999)
ROWS_PER_INSERT = 64


@functools.cache
def _insert_statement(rows: int) -> str:
    """One INSERT of `rows` rows; its text built once per size (sqlite3 then finds the prepared
    statement by it: at most ROWS_PER_INSERT of them)."""
    return f"INSERT INTO outbox ({', '.join(COLUMNS)}) VALUES " + ", ".join([_ROW_MARKS] * rows)


# rows the store's log holds are looked up and deleted this many at a time from the oldest, one
# slice per call, so that ingress commits on the same thread wait for one slice, not a whole
# prune (4,000 rows at 8,000/s took 30-50 ms: the embedded p99). The evaluator moves rows in
# order, so the first slice with nothing moved ends a prune round (while the evaluator is
# behind, a round costs one small look-up)
PRUNE_SLICE = 128
_SELECT = f"SELECT seq, {', '.join(COLUMNS)} FROM outbox"
_SELECT_WITHOUT_PAYLOAD = (
    f"SELECT seq, {', '.join(c if c != 'payload' else 'NULL' for c in COLUMNS)} FROM outbox"
)
# INDEXED BY: without statistics SQLite took ix_deliveries_webhook_received for this (it serves
# the ORDER BY) and read every delivery of the webhook in the window for each look-up: ~0.7 ms
# each at 2.5 million deliveries, and ingress fell behind once the day filters filled
_FIRST_IN_LOG = (
    f"SELECT delivery_id FROM deliveries INDEXED BY {identity_index.NAME} "
    "WHERE webhook_uid = ? AND identity = ? "
    f"AND label = '{Label.ACCEPTED.value}' AND received_at >= ? "
    "ORDER BY received_at, delivery_id LIMIT 1"
)
_FIRST_IN_OUTBOX = (
    "SELECT webhook_uid, identity, delivery_id, received_at FROM outbox "
    f"WHERE label = '{Label.ACCEPTED.value}' AND identity IN ({{marks}}) ORDER BY seq"
)
_OLDEST = "SELECT received_at FROM outbox ORDER BY seq LIMIT 1"
_NOT_IN_STORE = "NOT EXISTS (SELECT 1 FROM store.deliveries d WHERE d.delivery_id = o.delivery_id)"
_LABELS = {label.value: label for label in Label}


def outbox_path(database: Database) -> str | None:
    """The outbox file of a store that is a SQLite file; None for other stores (PostgreSQL, an
    in-memory SQLite), where accepted deliveries wait in the delivery log itself."""
    path = database.sqlite_file
    if path is None or database.engine.url.drivername != "sqlite+aiosqlite":
        return None
    return path + SUFFIX


def create_schema(path: str) -> None:
    """The file and its table, once; WAL mode stays set in the file."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        use_wal(conn.cursor())
        for statement in SCHEMA:
            conn.execute(statement)
    finally:
        conn.close()


class PruneSlice(NamedTuple):
    moved: list[int]  # the seqs of the slice that the store's log holds: to delete
    resume_after: int | None  # the seq the round's next slice starts after; None: round over


class OutboxAppender:
    """The outbox's only writer: appends batches, deletes moved rows. Its statements never
    wait for a lock: no other connection writes this file, and in WAL mode readers never block
    a writer. The delivery writer calls it on the outbox thread when its commits wait for the
    disk (`syncs`, the default), for large batches and for deletes; else on the event loop for
    batches of small payloads (handing each to a thread and back cost ~15 µs of CPU per
    delivery more: the embedded grid, 1 KB, 81 against 95 µs per request with the evaluator
    off); one call at a time."""

    def __init__(self, path: str, synchronous: SqliteSynchronous = "full") -> None:
        create_schema(path)
        # cached_statements: each INSERT size is a statement of its own (ROWS_PER_INSERT)
        self._conn = sqlite3.connect(
            path, timeout=30, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        # the store's (GATEWAY_SQLITE_SYNCHRONOUS): FULL, a commit (the 202 after it) survives
        # a power loss; NORMAL, a process kill only
        self._conn.execute(f"PRAGMA synchronous={SYNCHRONOUS[synchronous]}")
        self.syncs = synchronous == "full"  # each commit waits for the disk

    def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """One transaction: returns once committed."""
        chunks = [rows[i : i + ROWS_PER_INSERT] for i in range(0, len(rows), ROWS_PER_INSERT)]
        if len(chunks) == 1:  # one statement is a transaction of its own
            self._insert(chunks[0])
            return
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for chunk in chunks:
                self._insert(chunk)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._conn.execute(_insert_statement(len(rows)), [value for row in rows for value in row])

    def delete(self, seqs: Sequence[int]) -> None:
        """Deletes rows (at most PRUNE_SLICE), in one statement."""
        if seqs:
            marks = ",".join("?" * len(seqs))
            self._conn.execute(f"DELETE FROM outbox WHERE seq IN ({marks})", seqs)

    def close(self) -> None:
        self._conn.close()


class OutboxLookups:
    """What the writer reads, on a thread of its own (a read of the store may wait for a moment,
    while another process resets the store's WAL): which rows the store's log holds, and the
    de-duplication memory's look-ups of first copies."""

    def __init__(self, path: str, store_path: str) -> None:
        self._conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=30, check_same_thread=False
        )
        self._store = sqlite3.connect(
            f"file:{store_path}?mode=ro", uri=True, timeout=30, check_same_thread=False
        )

    def moved_slice(self, after: int, limit: int = PRUNE_SLICE) -> PruneSlice:
        """Of the next `limit` rows past seq `after`, those the store's delivery log holds
        (moved by the evaluator)."""
        head = self._conn.execute(
            "SELECT seq, delivery_id FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        ).fetchall()
        if not head:
            return PruneSlice([], None)
        ids = [delivery_id for _, delivery_id in head]
        marks = ",".join("?" * len(ids))
        query = f"SELECT delivery_id FROM deliveries WHERE delivery_id IN ({marks})"
        moved = {row[0] for row in self._store.execute(query, ids)}
        self._store.commit()  # end the read: the store's WAL can be checkpointed past it
        if not moved:
            return PruneSlice([], None)  # the evaluator is behind here: nothing further is moved
        seqs = [seq for seq, delivery_id in head if delivery_id in moved]
        return PruneSlice(seqs, head[-1][0] if len(head) == limit else None)

    def first_copies(self, wanted: Sequence[tuple[str, str, str, str]]) -> list[str | None]:
        """For each (webhook, identity, since, outbox_until), times as stored: the id of the first
        accepted copy received from `since` on, in the store's log (indexed), or else here. Rows
        here are not indexed by identity (an index cost every append ~10 µs of CPU, measured), so
        they are read, once for the whole batch, only when the oldest row here was received at
        or before some look-up's `outbox_until`: while the evaluator keeps up, the outbox holds
        only deliveries newer than any key that has left the exact memory."""
        found: list[str | None] = []
        for webhook_uid, identity, since, _ in wanted:
            row = self._store.execute(_FIRST_IN_LOG, (webhook_uid, identity, since)).fetchone()
            found.append(None if row is None else row[0])
        self._store.commit()  # end the read: the store's WAL can be checkpointed past it
        missing = [i for i, first in enumerate(found) if first is None]
        if not missing:
            return found
        oldest = self._conn.execute(_OLDEST).fetchone()
        if oldest is None or all(oldest[0] > wanted[i][3] for i in missing):
            return found
        identities = sorted({wanted[i][1] for i in missing})
        query = _FIRST_IN_OUTBOX.format(marks=",".join("?" * len(identities)))
        copies: dict[tuple[str, str], list[tuple[str, str]]] = {}  # each key's, oldest first
        for webhook_uid, identity, delivery_id, received in self._conn.execute(query, identities):
            copies.setdefault((webhook_uid, identity), []).append((delivery_id, received))
        for i in missing:
            webhook_uid, identity, since, _ = wanted[i]
            found[i] = first_since(copies.get((webhook_uid, identity), ()), since)
        return found

    def close(self) -> None:
        self._conn.close()
        self._store.close()


class Outbox:
    """Reads of the outbox, from the event loop (the evaluator, the delivery log API, ingress's
    backlog count). Never writes it."""

    def __init__(self, path: str, store_path: str) -> None:
        create_schema(path)
        self.path = path
        self.engine = create_async_engine(
            f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 30}
        )
        store = store_path.replace("'", "''")

        def attach_store(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA query_only=ON")  # only the appender writes this file
            cursor.execute(f"ATTACH DATABASE '{store}' AS store")
            cursor.close()

        event.listen(self.engine.sync_engine, "connect", attach_store)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    async def read(self, after_seq: int, limit: int) -> list[tuple[int, DeliveryRecord]]:
        """The next rows in append order after `after_seq`, with their seq."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"{_SELECT} WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit)
            )
            return [(row[0], _record(row[1:])) for row in result]

    async def of_webhook(self, webhook_uid: str) -> list[DeliveryRecord]:
        """The webhook's accepted deliveries waiting for the evaluator (without payloads): a
        scan of the outbox, which holds at most GATEWAY_MAX_BACKLOG waiting deliveries and the
        moved ones not pruned yet (~0.6 ms a thousand rows)."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"{_SELECT_WITHOUT_PAYLOAD} o WHERE webhook_uid = ? AND label = ? "
                f"AND {_NOT_IN_STORE}",
                (webhook_uid, Label.ACCEPTED.value),
            )
            return [_record(row[1:]) for row in result]

    async def find(self, webhook_uid: str, delivery_id: str) -> DeliveryRecord | None:
        """One accepted delivery waiting here, with its payload, or None."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"{_SELECT} WHERE delivery_id = ? AND webhook_uid = ? AND label = ?",
                (delivery_id, webhook_uid, Label.ACCEPTED.value),
            )
            row = result.first()
        return None if row is None else _record(row[1:])

    async def count_waiting(self) -> int:
        """Accepted deliveries here that the store's log does not hold yet."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"SELECT count(*) FROM outbox o WHERE label = ? AND {_NOT_IN_STORE}",
                (Label.ACCEPTED.value,),
            )
            return int(result.scalar_one())

    async def oldest_waiting(self) -> datetime | None:
        """When the oldest accepted delivery still waiting was received."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"SELECT received_at FROM outbox o WHERE label = ? AND {_NOT_IN_STORE} "
                "ORDER BY seq LIMIT 1",
                (Label.ACCEPTED.value,),
            )
            value = result.scalar()
        return None if value is None else from_sqlite_time(value)

    async def accepted(self) -> list[DeliveryRecord]:
        """Every accepted delivery here, without payloads (de-duplication memory on start)."""
        async with self._read() as conn:
            result = await conn.exec_driver_sql(
                f"{_SELECT_WITHOUT_PAYLOAD} WHERE label = ? ORDER BY seq", (Label.ACCEPTED.value,)
            )
            return [_record(row[1:]) for row in result]

    async def close(self) -> None:
        await self.engine.dispose()


def row_of(record: DeliveryRecord) -> tuple[Any, ...]:
    """The outbox row of `record` (COLUMNS, encoded for SQLite): its delivery-log values
    (`DELIVERIES`) without the evaluation's two, built directly, without the log row's dict and
    the generic column encoders, which cost the embedded serving process more than the rest of
    its part in the append."""
    accepted = record.label is Label.ACCEPTED
    return (
        record.delivery_id, record.webhook_uid, sqlite_time(record.received_at), record.size,
        record.label.value, record.identity, record.duplicate_of,
        record.payload if accepted else None,
        None if record.reason is None else record.reason.value,
        record.headers if accepted else None,
    )  # fmt: skip


def _record(row: Sequence[Any]) -> DeliveryRecord:
    reason = None if row[8] is None else Reason(row[8])
    return DeliveryRecord(
        row[0], row[1], from_sqlite_time(row[2]), row[3], _LABELS[row[4]], row[5], row[6],
        row[7], reason, row[9],
    )  # fmt: skip
