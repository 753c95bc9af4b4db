"""Embedded backend on SQLite: the write gate and the delivery log writer's dedicated connection."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from gateway.backends.contract import DeliveryRecord, Label
from gateway.backends.delivery_writer import DeliveryWriter
from gateway.store import create_database, migrate
from gateway.store import tables as t
from gateway.store.db import WriteGate


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


async def test_writer_commits_before_returning_and_batches(tmp_path: Path) -> None:
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db")
    await migrate(database)
    writer = DeliveryWriter(database)
    assert writer._appender is not None  # the dedicated connection is in use on a file
    writer.start()
    try:
        await asyncio.gather(*(writer.write(_record(i)) for i in range(300)))
        writer.write_later(_record(1000, Label.AUTH))
        async with database.read() as conn:
            count = await conn.execute(select(func.count()).select_from(t.deliveries))
            assert count.scalar_one() >= 300
        # the consumer's transactions and the writer take turns without busy waits
        async with database.transaction() as conn:
            pending = asyncio.create_task(writer.write(_record(2000)))
            await asyncio.sleep(0.05)
            assert not pending.done()  # waits for the open write transaction, then commits
        await asyncio.wait_for(pending, 5)
    finally:
        await writer.close()
    d = t.deliveries
    async with database.read() as conn:
        count = await conn.execute(select(func.count()).select_from(d))
        assert count.scalar_one() == 302
        # accepted deliveries wait for the evaluator as pending, the rejection does not
        pending = await conn.execute(
            select(func.count()).select_from(d).where(d.c.evaluation == "pending")
        )
        assert pending.scalar_one() == 301
    await database.close()


async def test_writer_reports_a_failed_commit(tmp_path: Path) -> None:
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/g.db")
    await migrate(database)
    writer = DeliveryWriter(database)
    writer.start()
    try:
        await writer.write(_record(1))
        with pytest.raises(IntegrityError):
            await writer.write(_record(1))  # duplicate delivery id: the commit fails
        await writer.write(_record(2))  # and the writer keeps going
    finally:
        await writer.close()
        await database.close()
