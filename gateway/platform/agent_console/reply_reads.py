"""A run's replies as its page lists them: per target (the issue, pull request or thread), what
the API says of it (state, calls made, link, the provider's refusal) and what was sent there so
far, in order: the message posted when the run started, then each end that updated it (or,
when the start posted nothing, posted one of its own). Read from the outbound queue's reply
rows, whose payloads say which change of the run they tell
(gateway/platform/runs/record/replies.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.record.reply_status import run_replies
from gateway.webhook_gateway.connections.reply_outbox import KIND

m = t.outbound_messages


@dataclass(frozen=True, slots=True)
class ReplyView:
    where: str  # the target's fields, e.g. "repository Codertocat/Hello-World, number 1"
    state: str  # of its latest message: pending, delivered, failed
    attempts: int
    last_error: str | None
    link: str | None
    messages: tuple[str, ...]  # e.g. ("posted when the run started", "updated when it SUCCEEDED")

    @property
    def settled(self) -> bool:
        return self.state != "pending"


def _told(payload: dict[str, Any], state: str) -> str:
    """One message in words: what it did (or is doing) at the provider, and on which change."""
    if payload.get("phase") == "started":
        done, doing, change = "posted", "posting", "the run started"
    else:
        edits = bool(payload.get("message_id"))
        done, doing = ("updated", "updating") if edits else ("posted", "posting")
        change = f"it {payload.get('state') or 'ended'}"
    if state == "pending":
        return f"{doing} ({change})"
    if state == "failed":
        return f"not {done} ({change})"
    return f"{done} when {change}"


async def reply_views(conn: AsyncConnection, run_id: str) -> list[ReplyView]:
    replies = (await run_replies(conn, [run_id])).get(run_id, [])
    query = (
        select(m.c.payload, m.c.state)
        .where(m.c.kind == KIND, m.c.subject == run_id)
        .order_by(m.c.created_at, m.c.id)
    )
    rows = (await conn.execute(query)).all()
    views = []
    for reply in replies:
        target = msgspec.to_builtins(reply.target)
        where = ", ".join(f"{k} {v}" for k, v in target.items() if v is not None)
        told = tuple(_told(r.payload, r.state) for r in rows if r.payload.get("target") == target)
        views.append(
            ReplyView(where, reply.state, reply.attempts, reply.last_error, reply.link, told)
        )
    return views
