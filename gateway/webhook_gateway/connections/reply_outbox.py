"""A run's replies in the outbound queue: their kind and keys, and the release of the edits that
waited for the message they edit (docs/providers.md#replies)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.outbound import release
from gateway.foundation.store import tables as t

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


def is_poster(payload: dict[str, Any] | None, next_attempt_at: datetime | None) -> bool:
    """Whether a pending reply posts a message when it is sent: it is due (not held) and has
    no message to edit. At most one of a run's replies is (gateway/platform/runs/record/
    replies.py)."""
    return next_attempt_at is not None and (payload or {}).get("message_id") is None


async def release_edits(conn: AsyncConnection, run_id: str, message_id: str | None) -> int:
    """When the run's reply that posted is settled: its held edits become due, editing
    `message_id`; how many. None (it posted nothing: it failed): only the newest held one is
    released, to post the run's message, and the others wait for it in turn (each renders the
    run's newest end when sent, so which one posts does not matter)."""
    held = (
        select(m.c.id, m.c.payload)
        .where(
            m.c.kind == KIND,
            m.c.subject == run_id,
            m.c.state == "pending",
            m.c.next_attempt_at.is_(None),
        )
        .order_by(m.c.created_at.desc(), m.c.id.desc())
    )
    rows = (await conn.execute(held)).all()
    if message_id is None:
        rows = rows[:1]
    count = 0
    for row in rows:
        count += await release(conn, row.id, row.payload | {"message_id": message_id})
    return count
