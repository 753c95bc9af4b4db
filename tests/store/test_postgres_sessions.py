"""PostgreSQL sessions of the store (gateway.foundation.store.db): a read is its statements, each on
its own (autocommit, no BEGIN or ROLLBACK around them); a transaction is one, in READ COMMITTED,
committed or rolled back whole."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from sqlalchemy import text

from gateway.foundation.store import create_database

XID = text("SELECT txid_current()")  # the transaction's id: a new one per transaction


def test_reads_are_statements_and_transactions_are_whole(postgres_url: str) -> None:
    table = f"sessions_{secrets.token_hex(4)}"

    async def main() -> None:
        database = create_database(postgres_url.replace("postgresql://", "postgresql+asyncpg://"))
        try:
            async with database.read() as conn:
                first, second = [(await conn.execute(XID)).scalar() for _ in range(2)]
            assert first != second  # each statement was a transaction of its own

            async with database.transaction() as conn:
                first = (await conn.execute(XID)).scalar()
                await conn.execute(text(f"CREATE TABLE {table} (n integer)"))
                second = (await conn.execute(XID)).scalar()
                level = (await conn.execute(text("SHOW transaction_isolation"))).scalar()
            assert (first == second, level) == (True, "read committed")

            with pytest.raises(RuntimeError):
                async with database.transaction() as conn:
                    await conn.execute(text(f"INSERT INTO {table} VALUES (1)"))
                    raise RuntimeError("the unit of work fails")
            async with database.transaction() as conn:
                await conn.execute(text(f"INSERT INTO {table} VALUES (2)"))
            async with database.read() as conn:
                kept = (await conn.execute(text(f"SELECT n FROM {table}"))).scalars().all()
            assert kept == [2]
        finally:
            async with database.transaction() as conn:
                await conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
            await database.close()

    asyncio.run(main())


def test_a_cancelled_transaction_stays_cancelled(postgres_url: str) -> None:
    """A transaction cancelled in a statement raises the cancellation: the connection it
    invalidates must not turn it into an error a loop catches and goes on after."""

    async def main() -> None:
        database = create_database(postgres_url.replace("postgresql://", "postgresql+asyncpg://"))
        try:

            async def sleep_in_a_transaction() -> None:
                async with database.transaction() as conn:
                    await conn.execute(text("SELECT pg_sleep(5)"))

            task = asyncio.create_task(sleep_in_a_transaction())
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 3)
            async with database.transaction() as conn:  # the store serves on
                assert (await conn.execute(text("SELECT 1"))).scalar() == 1
        finally:
            await database.close()

    asyncio.run(main())


def test_sessions_one_after_another_reuse_the_last_connection(postgres_url: str) -> None:
    """The pool hands out the connection returned last: a process's statements stay on the few
    connections it keeps busy, whose prepared statements (asyncpg prepares each statement text
    once a connection) are then reused. Handed out in turn, every connection the pool ever
    opened prepared the evaluator's statements again (docs/performance.md, 2026-12-04)."""
    backend = text("SELECT pg_backend_pid()")

    async def main() -> None:
        database = create_database(postgres_url.replace("postgresql://", "postgresql+asyncpg://"))
        try:

            async def held_while_another_works() -> int:
                async with database.read() as conn:
                    pid = (await conn.execute(backend)).scalar()
                    await asyncio.sleep(0.1)
                    return int(pid)

            # three connections in the pool, returned in this order
            opened = await asyncio.gather(*(held_while_another_works() for _ in range(3)))
            assert len(set(opened)) == 3
            async with database.read() as conn:
                last = (await conn.execute(backend)).scalar()
            for _ in range(5):
                async with database.transaction() as conn:
                    assert (await conn.execute(backend)).scalar() == last
                async with database.read() as conn:
                    assert (await conn.execute(backend)).scalar() == last
        finally:
            await database.close()

    asyncio.run(main())
