"""A run's reply where its work came from: when a run that a provider event started (through a
connection with reply credentials) starts, one `reply` message is enqueued, in the transaction
of the change; when it ends, another that edits the first one's message in place
(docs/providers.md#replies). The dispatcher sends them (reply_delivery.py).

Where: the run's work item's target (`run_work_item`), the one place a reply's address is read
from a payload (gateway/webhook_gateway/providers/work_items.py, when the work item is made). A run
of no work item has no reply: every provider event a reply can go back to makes a work item with its
first runs, so only runs started before work items existed lack one, and they stay silent.
Who caused it (the template's `event.actor`) comes from the run's delivery, by the same reader.

Ordering, so that a run makes one message however its replies are retried, fail or race, and
whatever the gateway does when it crashes: one reply of a run at a time may *post* (a message
whose payload has no `message_id`), every other one edits what it posted.
- The start's key is `reply:{run}:started` (a run claimed again after a lost lease, or resumed
  by a follow-up, enqueues nothing new), and a start that comes after one of the run's ends
  (a run cancelled while queued, then resumed) enqueues nothing: the end's message is the one.
- Each end is keyed by its timeline entry. It edits the message the run's replies delivered
  last; when none exists and a reply that posts is still pending (the start, or an end that
  found nothing to edit), the end is enqueued *held*, and that poster's settling releases it
  with the id it got (gateway/webhook_gateway/connections/reply_outbox.py); when none is pending
  either (the start failed, or there was none), the end posts.
Both sides lock the run's pending replies first (a poster's settling updates its row), so
neither misses the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import orjson
from msgspec import to_builtins
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.delivery_rows import headers_of
from gateway.foundation.outbound import enqueue
from gateway.foundation.store import tables as t
from gateway.platform.runs.record.states import TERMINAL
from gateway.webhook_gateway.connections.reply_outbox import KIND, ended_key, is_poster, started_key
from gateway.webhook_gateway.providers.work_items import source_of
from gateway.webhook_gateway.replies import ReplyTarget
from gateway.webhook_gateway.replies.work_items import run_work_item

r, c, d, m = t.runs, t.provider_connections, t.deliveries, t.outbound_messages
STARTED = frozenset({"CLAIMED", "INPROGRESS"})


class RunChange(Protocol):
    """What replies read of a timeline entry (timeline.Entry)."""

    id: str
    run_id: str
    state: str
    at: datetime
    reason: str | None


async def on_run_entries(conn: AsyncConnection, entries: Sequence[RunChange]) -> None:
    """Called with every run state change (timeline.record_entries). Only starts and ends
    cost a statement, and only those of runs a delivery started cost more."""
    wanted = [e for e in entries if e.state in STARTED or e.state in TERMINAL]
    if not wanted:
        return
    query = select(r.c.run_id, r.c.metadata, r.c.delivery_id).where(
        r.c.run_id.in_({e.run_id for e in wanted}), r.c.delivery_id.is_not(None)
    )
    runs = {row.run_id: row for row in await conn.execute(query)}
    connected: dict[str, str] = {}
    for run_id, row in runs.items():
        uid = (row.metadata or {}).get("connection_uid")
        if isinstance(uid, str):
            connected[run_id] = uid
    if not connected:
        return
    replying = await _replying(conn, set(connected.values()))
    origins: dict[str, tuple[ReplyTarget, str | None] | None] = {}
    for entry in wanted:
        connection = connected.get(entry.run_id)
        if connection is None or connection not in replying:
            continue
        if entry.run_id not in origins:
            origins[entry.run_id] = await _origin(
                conn, entry.run_id, replying[connection], runs[entry.run_id].delivery_id
            )
        origin = origins[entry.run_id]
        if origin is None:
            continue
        target, actor = origin
        payload = {
            "connection_uid": connection,
            "target": to_builtins(target),
            "actor": actor,
            "run_id": entry.run_id,
            "at": entry.at.isoformat(),
        }
        if entry.state in STARTED:
            await _started(conn, entry, payload)
        else:
            await _ended(conn, entry, payload)


async def _replying(conn: AsyncConnection, uids: set[str]) -> dict[str, str]:
    """Those of `uids` that are live connections with reply credentials -> their provider."""
    query = select(c.c.uid, c.c.provider).where(
        c.c.uid.in_(uids),
        c.c.deleted_at.is_(None),
        c.c.enabled.is_(True),
        c.c.credentials_encrypted.is_not(None),
    )
    return {row.uid: row.provider for row in await conn.execute(query)}


async def _origin(
    conn: AsyncConnection, run_id: str, provider: str, delivery_id: str
) -> tuple[ReplyTarget, str | None] | None:
    """Where the run's replies go (its work item's target) and who caused the run."""
    item = await run_work_item(conn, run_id)
    if item is None or item.target is None:
        return None
    return item.target, await _actor(conn, provider, delivery_id)


async def _actor(conn: AsyncConnection, provider: str, delivery_id: str) -> str | None:
    row = (
        await conn.execute(select(d.c.payload, d.c.headers).where(d.c.delivery_id == delivery_id))
    ).first()
    if row is None or row.payload is None:
        return None
    try:
        payload = orjson.loads(row.payload)
    except orjson.JSONDecodeError:
        return None
    headers = headers_of(row.headers) if row.headers else {}
    source = source_of(provider, headers, payload)
    return None if source is None else source.actor


async def _started(conn: AsyncConnection, entry: RunChange, payload: dict[str, Any]) -> None:
    if await _ended_before(conn, entry.run_id):
        return  # a late start: an end's reply already posts (or posted) the run's message
    await enqueue(
        conn,
        kind=KIND,
        key=started_key(entry.run_id),
        destination=payload["connection_uid"],
        subject=entry.run_id,
        payload=payload | {"phase": "started", "state": entry.state, "message_id": None},
    )


async def _ended_before(conn: AsyncConnection, run_id: str) -> bool:
    query = select(m.c.id).where(
        m.c.kind == KIND, m.c.subject == run_id, m.c.key != started_key(run_id)
    )
    return (await conn.execute(query.limit(1))).first() is not None


async def _ended(conn: AsyncConnection, entry: RunChange, payload: dict[str, Any]) -> None:
    """The end's edit: of the message the run's replies last delivered; held while a reply
    that posts is pending; posting itself when there is neither."""
    pending = await conn.execute(
        select(m.c.payload, m.c.next_attempt_at)
        .where(m.c.kind == KIND, m.c.subject == entry.run_id, m.c.state == "pending")
        .with_for_update()
    )
    held = any(is_poster(row.payload, row.next_attempt_at) for row in pending)
    message_id = None if held else await _last_message(conn, entry.run_id)
    await enqueue(
        conn,
        kind=KIND,
        key=ended_key(entry.run_id, entry.id),
        destination=payload["connection_uid"],
        subject=entry.run_id,
        payload=payload
        | {
            "phase": "ended",
            "state": entry.state,
            "reason": entry.reason,
            "message_id": message_id,
        },
        held=held,
    )


async def _last_message(conn: AsyncConnection, run_id: str) -> str | None:
    """The provider's id of the message the run's replies delivered last, if any."""
    query = (
        select(m.c.result)
        .where(m.c.kind == KIND, m.c.subject == run_id, m.c.state == "delivered")
        .order_by(m.c.updated_at.desc())
        .limit(1)
    )
    result = (await conn.execute(query)).scalar_one_or_none()
    found = (result or {}).get("message_id")
    return found if isinstance(found, str) else None
