"""Enqueueing: in the caller's transaction, idempotent on the key; held messages wait for their
release. On SQLite and PostgreSQL."""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import select

from gateway.foundation.outbound import enqueue, release
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t

m = t.outbound_messages


async def rows(database: Database, kind: str) -> list:
    async with database.read() as conn:
        return list((await conn.execute(select(m).where(m.c.kind == kind))).all())


async def test_a_key_enqueued_twice_is_one_message(database: Database, kind: str) -> None:
    key = f"{kind}:1"
    async with database.transaction() as conn:
        first = await enqueue(
            conn, kind=kind, key=key, destination="d", payload={"n": 1}, subject="run_1"
        )
        again = await enqueue(conn, kind=kind, key=key, destination="d", payload={"n": 2})
    async with database.transaction() as conn:
        later = await enqueue(conn, kind=kind, key=key, destination="d", payload={"n": 3})
    assert first is not None and again is None and later is None
    [row] = await rows(database, kind)
    assert (row.id, row.payload, row.state, row.attempts, row.subject) == (
        first,
        {"n": 1},
        "pending",
        0,
        "run_1",
    )
    assert row.next_attempt_at is not None


async def test_a_message_commits_with_its_change_or_not_at_all(
    database: Database, kind: str
) -> None:
    with pytest.raises(RuntimeError):
        async with database.transaction() as conn:
            await enqueue(conn, kind=kind, key=f"{kind}:x", destination="d", payload={})
            raise RuntimeError("the change failed")
    assert await rows(database, kind) == []


async def test_a_held_message_waits_for_its_release(database: Database, kind: str) -> None:
    async with database.transaction() as conn:
        uid = await enqueue(
            conn, kind=kind, key=f"{kind}:h", destination="d", payload={"a": 1}, held=True
        )
    assert uid is not None
    [row] = await rows(database, kind)
    assert row.next_attempt_at is None
    async with database.transaction() as conn:
        assert await release(conn, uid, {"a": 2})
        assert not await release(conn, uid)  # released once
    [row] = await rows(database, kind)
    assert row.next_attempt_at is not None and row.payload == {"a": 2}


async def test_keys_are_unique_across_kinds(database: Database, kind: str) -> None:
    key = f"shared:{secrets.token_hex(4)}"
    async with database.transaction() as conn:
        assert await enqueue(conn, kind=kind, key=key, destination="d", payload={})
        assert await enqueue(conn, kind=kind + "b", key=key, destination="d", payload={}) is None
