"""What a run's answer says of its replies: per target, the state of its latest message, the
calls made, the provider's last refusal and the link to the message (one query for a page)."""

from __future__ import annotations

from collections.abc import Collection

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.record.models import RunReply
from gateway.webhook_gateway.connections.reply_outbox import KIND
from gateway.webhook_gateway.replies import ReplyTarget

m = t.outbound_messages


async def run_replies(conn: AsyncConnection, run_ids: Collection[str]) -> dict[str, list[RunReply]]:
    if not run_ids:
        return {}
    query = (
        select(m.c.subject, m.c.payload, m.c.state, m.c.attempts, m.c.last_error, m.c.result)
        .where(m.c.kind == KIND, m.c.subject.in_(list(run_ids)))
        .order_by(m.c.created_at, m.c.id)
    )
    found: dict[str, dict[str, RunReply]] = {}
    for row in await conn.execute(query):
        target = row.payload.get("target") or {}
        key = msgspec.json.encode(target).decode()
        before = found.setdefault(row.subject, {}).get(key)
        link = (row.result or {}).get("url") if row.state == "delivered" else None
        found[row.subject][key] = RunReply(
            target=msgspec.convert(target, ReplyTarget),
            state=row.state,
            attempts=row.attempts + (before.attempts if before else 0),
            last_error=row.last_error if row.state != "delivered" else None,
            link=link or (before.link if before else None),
        )
    return {run_id: list(targets.values()) for run_id, targets in found.items()}
