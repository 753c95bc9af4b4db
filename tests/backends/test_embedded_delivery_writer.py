"""Embedded backend: the write gate, and the delivery writer (the outbox beside a SQLite file, the
delivery log itself on PostgreSQL)."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.delivery_rows import DELIVERIES, EVALUATED, delivery_row
from gateway.foundation.store import Database, create_database, migrate
from gateway.foundation.store import tables as t
from gateway.foundation.store.db import WriteGate
from gateway.webhook_gateway.transports.embedded.writer import (
    PRUNE_EVERY_S,
    SYNC_INTERVAL_S,
    THREAD_APPEND_BYTES,
    DeliveryWriter,
)
from gateway.webhook_gateway.transports.outbox import file as outbox
from tests.conftest import make_settings


def _record(i: int, label: Label = Label.ACCEPTED) -> DeliveryRecord:
    return DeliveryRecord(f"d-{i}", "wh-1", datetime.now(UTC), 10, label, None, None, b'{"a": 1}')


async def test_gate_serves_urgent_waiters_first_and_is_reentrant() -> None:
    gate = WriteGate()
    order: list[str] = []

    async def take(name: str, urgent: bool) -> None:
        async with gate.hold(urgent=urgent):
            order.append(name)

    async with gate.hold():
        async with gate.hold():  # nested in the same task: no deadlock
            pass
        tasks = [asyncio.create_task(take("normal", False))]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(take("urgent", True)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == ["urgent", "normal"]


async def test_gate_survives_a_cancelled_waiter() -> None:
    gate = WriteGate()
    async with gate.hold():
        waiter = asyncio.create_task(gate.hold().__aenter__())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    async with asyncio.timeout(1):
        async with gate.hold():
            pass


def _outbox_rows(tmp_path: Path) -> list[tuple[str, str]]:
    """(delivery id, label) of the outbox rows, read by a connection of its own."""
    conn = sqlite3.connect(tmp_path / ("g.db" + outbox.SUFFIX))
    try:
        return conn.execute("SELECT delivery_id, label FROM outbox ORDER BY seq").fetchall()
    finally:
        conn.close()


async def test_writer_commits_to_the_outbox_before_returning(tmp_path: Path) -> None:
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db")
    await migrate(database)
    writer = DeliveryWriter(database)
    assert writer._appender is not None  # a SQLite file: the outbox beside it
    writer.start()
    try:
        await asyncio.gather(*(writer.write(_record(i)) for i in range(300)))
        assert len(_outbox_rows(tmp_path)) == 300  # committed: another connection sees them
        writer.write_later(_record(1000, Label.AUTH))
        # an open write transaction on the store (the evaluator's) does not hold ingress up
        async with database.transaction() as conn:
            await conn.execute(t.deliveries.delete())
            await asyncio.wait_for(writer.write(_record(2000)), 5)
    finally:
        await writer.close()
    rows = _outbox_rows(tmp_path)
    assert len(rows) == 302 and rows[-2:] == [
        ("d-1000", Label.AUTH.value),
        ("d-2000", Label.ACCEPTED.value),
    ]
    async with database.read() as conn:  # nothing in the store's log until evaluated
        count = await conn.execute(select(func.count()).select_from(t.deliveries))
        assert count.scalar_one() == 0
    await database.close()


async def _keep_the_queue_full(writer: DeliveryWriter, first: int) -> None:
    """A record every turn of the loop, numbered from `first`: more arrive during each commit."""
    for n in itertools.count(first):
        writer.write_later(_record(n, Label.AUTH))
        await asyncio.sleep(0)


@pytest.fixture(params=["on the thread", "on the loop"])
def appends(request: pytest.FixtureRequest) -> str:
    """Both of the writer's append paths: every batch on the outbox thread (commits that wait
    for the disk, the default), or small batches on the event loop (GATEWAY_SQLITE_SYNCHRONOUS
    normal)."""
    return str(request.param)


async def _started_writer(tmp_path: Path, appends: str) -> tuple[Database, DeliveryWriter]:
    synchronous = "normal" if appends == "on the loop" else "full"
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db", synchronous=synchronous)
    await migrate(database)
    writer = DeliveryWriter(database)
    writer.start()
    return database, writer


async def test_a_cancelled_caller_s_row_is_committed_and_the_others_answered(
    tmp_path: Path, appends: str
) -> None:
    """A caller cancelled while its row waits (a shutdown) leaves the row to be committed like
    the others; the writer skips its cancelled future and answers the rest."""
    database, writer = await _started_writer(tmp_path, appends)
    try:
        callers = [asyncio.create_task(writer.write(_record(i))) for i in range(3)]
        await asyncio.sleep(0)  # each has queued its row
        callers[1].cancel()
        done = await asyncio.gather(*callers, return_exceptions=True)
        assert done[0] is None and done[2] is None
        assert isinstance(done[1], asyncio.CancelledError)
        assert sorted(d for d, _ in _outbox_rows(tmp_path)) == ["d-0", "d-1", "d-2"]
        await writer.write(_record(3))  # the writer goes on
    finally:
        await writer.close()
        await database.close()
    assert sorted(d for d, _ in _outbox_rows(tmp_path)) == ["d-0", "d-1", "d-2", "d-3"]


async def test_writer_prunes_the_outbox_under_sustained_load(tmp_path: Path, appends: str) -> None:
    """On the thread, each commit awaits and more records queue meanwhile: the queue never
    empties, and the prune must happen inside the drain. On the loop, a commit takes no turn of
    the loop, and the drain returns between turns."""
    database, writer = await _started_writer(tmp_path, appends)
    moved = [_record(i) for i in range(100)]
    try:
        await asyncio.gather(*(writer.write(r) for r in moved))
        async with database.transaction() as conn:  # the evaluator moves them to the log
            rows = [delivery_row(r, EVALUATED, datetime.now(UTC)) for r in moved]
            await DELIVERIES.insert(conn, rows)

        drains = 0  # the writer's drains begun: one returns only once the queue is empty
        drain = writer._drain

        async def counted_drain() -> None:
            nonlocal drains
            drains += 1
            await drain()

        writer._drain = counted_drain  # type: ignore[method-assign]
        load = asyncio.create_task(_keep_the_queue_full(writer, first=1000))
        try:
            deadline = asyncio.get_running_loop().time() + 6 * PRUNE_EVERY_S
            while {"d-0", "d-99"} & {d for d, _ in _outbox_rows(tmp_path)}:
                assert asyncio.get_running_loop().time() < deadline, "not pruned under load"
                await asyncio.sleep(0.05)
            if appends == "on the thread":  # pruned inside the drain the load began
                assert drains == 1
            else:
                assert drains > 1
        finally:
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)
    finally:
        await writer.close()
        await database.close()
    assert not {r.delivery_id for r in moved} & {d for d, _ in _outbox_rows(tmp_path)}


async def test_a_prune_round_under_load_goes_one_slice_between_commits(tmp_path: Path) -> None:
    """A whole round at once held every commit behind it (30-50 ms at 8,000 deliveries/s)."""
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db")
    await migrate(database)
    writer = DeliveryWriter(database)
    appender = writer._appender
    assert appender is not None
    calls: list[str] = []  # the outbox's writes, in order
    append, delete = appender.append, appender.delete

    def recorded_append(rows: Any) -> None:
        calls.append("commit")
        append(rows)

    def recorded_delete(seqs: Any) -> None:
        delete(seqs)
        calls.append(f"slice {len(seqs)}")

    appender.append = recorded_append  # type: ignore[method-assign]
    appender.delete = recorded_delete  # type: ignore[method-assign]
    writer.start()
    moved = [_record(i) for i in range(5 * outbox.PRUNE_SLICE)]
    try:
        await asyncio.gather(*(writer.write(r) for r in moved))
        async with database.transaction() as conn:  # the evaluator moves them to the log
            rows = [delivery_row(r, EVALUATED, datetime.now(UTC)) for r in moved]
            await DELIVERIES.insert(conn, rows)
        calls.clear()

        def removed() -> int:
            return sum(int(c.split()[1]) for c in list(calls) if c.startswith("slice"))

        load = asyncio.create_task(_keep_the_queue_full(writer, first=10_000))
        try:
            deadline = asyncio.get_running_loop().time() + 6 * PRUNE_EVERY_S
            while removed() < len(moved):
                assert asyncio.get_running_loop().time() < deadline, "not pruned under load"
                await asyncio.sleep(0.01)
            during_load = list(calls)
        finally:
            load.cancel()
            await asyncio.gather(load, return_exceptions=True)
        slices = [c for c in during_load if c.startswith("slice")]
        assert len(slices) >= 5 and during_load.count("commit") >= len(slices)
        # a commit between any two slices: none waited for more than one slice
        pairs = itertools.pairwise(during_load)
        assert not any(a.startswith("slice") and b.startswith("slice") for a, b in pairs)
    finally:
        await writer.close()
        await database.close()
    assert not {r.delivery_id for r in moved} & {d for d, _ in _outbox_rows(tmp_path)}


async def test_small_batches_commit_on_the_event_loop_large_ones_on_the_outbox_thread(
    tmp_path: Path,
) -> None:
    """GATEWAY_SQLITE_SYNCHRONOUS=normal: a commit does not wait for the disk, and a batch of
    small payloads commits on the loop."""
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db", synchronous="normal")
    await migrate(database)
    writer = DeliveryWriter(database)
    appender = writer._appender
    assert appender is not None
    threads: list[tuple[int, bool]] = []  # (rows, on the event loop's thread) of each append
    append = appender.append

    def recorded_append(rows: Any) -> None:
        threads.append((len(rows), threading.current_thread() is threading.main_thread()))
        append(rows)

    appender.append = recorded_append  # type: ignore[method-assign]
    writer.start()
    large = b'{"pad": "' + b"x" * THREAD_APPEND_BYTES + b'"}'
    try:
        await writer.write(_record(1))
        await writer.write(_record(2)._replace(payload=large, size=len(large)))
        await writer.write(_record(3))
    finally:
        await writer.close()
        await database.close()
    assert threads == [(1, True), (1, False), (1, True)]
    assert [d for d, _ in _outbox_rows(tmp_path)] == ["d-1", "d-2", "d-3"]
    conn = sqlite3.connect(tmp_path / ("g.db" + outbox.SUFFIX))
    try:
        (stored,) = conn.execute("SELECT payload FROM outbox WHERE delivery_id = 'd-2'").fetchone()
    finally:
        conn.close()
    assert stored == large


@pytest.mark.parametrize(("synchronous", "pragma"), [("full", 2), ("normal", 1)])
async def test_commits_wait_for_the_disk_by_default_and_never_on_the_event_loop(
    tmp_path: Path, synchronous: str, pragma: int
) -> None:
    """By default (full) every commit of the store and of the outbox syncs the log to disk
    before it returns, so a 202 survives a power loss; the outbox's then all run on its thread,
    the event loop never waits for the disk. `normal` is PRAGMA synchronous=NORMAL everywhere."""
    options = {} if synchronous == "full" else {"synchronous": synchronous}
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db", **options)
    await migrate(database)
    writer = DeliveryWriter(database)
    appender = writer._appender
    assert appender is not None
    on_loop: list[bool] = []
    append = appender.append

    def recorded_append(rows: Any) -> None:
        on_loop.append(threading.current_thread() is threading.main_thread())
        append(rows)

    appender.append = recorded_append  # type: ignore[method-assign]
    writer.start()
    try:
        for i in range(3):
            await writer.write(_record(i))
        (outbox_pragma,) = appender._conn.execute("PRAGMA synchronous").fetchone()
        async with database.read() as conn:
            read_pragma = (await conn.exec_driver_sql("PRAGMA synchronous")).scalar()
        async with database.transaction() as conn:
            write_pragma = (await conn.exec_driver_sql("PRAGMA synchronous")).scalar()
    finally:
        await writer.close()
        await database.close()
    assert (outbox_pragma, read_pragma, write_pragma) == (pragma, pragma, pragma)
    assert on_loop == [synchronous == "normal"] * 3
    assert [d for d, _ in _outbox_rows(tmp_path)] == ["d-0", "d-1", "d-2"]


async def test_commits_that_wait_for_the_disk_start_at_most_every_sync_interval(
    tmp_path: Path,
) -> None:
    """Under load, the rows that arrive while a synced commit waits for the disk, and for the
    rest of SYNC_INTERVAL_S, share the next commit's sync: at most one sync an interval, and
    every row committed."""
    database, writer = await _started_writer(tmp_path, "on the thread")
    appender = writer._appender
    assert appender is not None and appender.syncs
    commits: list[int] = []
    append = appender.append

    def counted_append(rows: Any) -> None:
        commits.append(len(rows))
        append(rows)

    appender.append = counted_append  # type: ignore[method-assign]

    async def trickle() -> None:  # a row every 0.2 ms: without the pause, a sync for 1 or 2
        for n in itertools.count():
            writer.write_later(_record(n, Label.AUTH))
            await asyncio.sleep(0.0002)

    load = asyncio.create_task(trickle())
    started = asyncio.get_running_loop().time()
    try:
        await asyncio.sleep(0.3)
    finally:
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
        await writer.close()
        elapsed = asyncio.get_running_loop().time() - started
        await database.close()
    assert 2 <= len(commits) <= elapsed / SYNC_INTERVAL_S + 2
    assert sum(commits) == len(_outbox_rows(tmp_path))


async def test_writer_reports_a_failed_commit(tmp_path: Path) -> None:
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db")
    await migrate(database)
    writer = DeliveryWriter(database)
    writer.start()
    try:
        await writer.write(_record(1))
        with pytest.raises(sqlite3.IntegrityError):
            await writer.write(_record(1))  # duplicate delivery id: the commit fails
        await writer.write(_record(2))  # and the writer keeps going
    finally:
        await writer.close()
        await database.close()
    assert [d for d, _ in _outbox_rows(tmp_path)] == ["d-1", "d-2"]


@pytest.fixture
def own_postgres(own_store: Callable[[str], str]) -> str:
    """A PostgreSQL database of this test's own: it counts every row of the log."""
    return own_store("postgresql")


async def test_writer_logs_pending_in_the_store_without_an_outbox(own_postgres: str) -> None:
    database = create_database(make_settings(own_postgres).database_url)
    await migrate(database)
    writer = DeliveryWriter(database)
    assert writer._appender is None  # PostgreSQL: the delivery log is the queue
    writer.start()
    try:
        await asyncio.gather(*(writer.write(_record(i)) for i in range(50)))
        with pytest.raises(IntegrityError):
            await writer.write(_record(1))
        writer.write_later(_record(1000, Label.AUTH))
        await writer.write(_record(50))
    finally:
        await writer.close()
    d = t.deliveries
    async with database.read() as conn:
        query = select(d.c.evaluation, func.count()).group_by(d.c.evaluation)
        assert dict((await conn.execute(query)).all()) == {"pending": 51, None: 1}
    await database.close()
