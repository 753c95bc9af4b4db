"""A run's replies in the outbound queue: their kind and keys, and the release of the edits that
waited for the message they edit (docs/providers.md#replies)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.outbound import release
from gateway.store import tables as t

KIND = "reply"
m = t.outbound_messages


def started_key(run_id: str) -> str:
    """One start per run, however often it starts (a lost lease, a follow-up)."""
    return f"reply:{run_id}:started"


def ended_key(run_id: str, change_id: str) -> str:
    """One end per ending of the run (`change_id`: its timeline entry)."""
    return f"reply:{run_id}:ended:{change_id}"


def ended_change(key: str) -> str | None:
    """The ending (timeline entry) an end's key names; None for another key."""
    head, _, change = key.rpartition(":ended:")
    return change if head.startswith("reply:") and change else None


async def release_edits(conn: AsyncConnection, run_id: str, message_id: str | None) -> int:
    """The run's held edits become due, editing `message_id` (None: the start posted nothing,
    and each posts a message of its own); how many."""
    held = select(m.c.id, m.c.payload).where(
        m.c.kind == KIND,
        m.c.subject == run_id,
        m.c.state == "pending",
        m.c.next_attempt_at.is_(None),
    )
    count = 0
    for row in (await conn.execute(held)).all():
        count += await release(conn, row.id, row.payload | {"message_id": message_id})
    return count
