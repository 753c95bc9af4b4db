"""Each recorded event becomes one outbound message per subscription that wants it, in the
transaction that records the event: an event and its messages commit together (docs/events.md).

One query per call finds the subscriptions of the teams concerned; a call with no subscriber
costs that query and nothing more. The message carries the body as it will be sent, so a later
change of the subscription (its URL, its secret) applies to what is still waiting, and a
deleted or disabled one stops its messages (the sender looks it up on every attempt).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import matches
from gateway.foundation.outbound.queue import enqueue_many
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import from_sqlite_time
from gateway.kernel import ids

KIND = "event"  # the outbound kind of a subscription's message
s = t.event_subscriptions
# (team_uid, factory_uid, type, at, data as a JSON-ready object or JSON text); `at` may be
# SQLite's naive UTC text, as the evaluator's batches encode it
Recorded = tuple[str | None, str | None, str, datetime | str, Any]


async def fan_out(conn: AsyncConnection, events: Sequence[Recorded]) -> int:
    """Enqueues the messages of `events`; how many."""
    teams = sorted({event[0] for event in events if event[0] is not None})
    if not teams:
        return 0
    query = select(s.c.uid, s.c.team_uid, s.c.factory_uid, s.c.events).where(
        s.c.team_uid.in_(teams), s.c.enabled.is_(True), s.c.deleted_at.is_(None)
    )
    subscriptions = (await conn.execute(query)).all()
    if not subscriptions:
        return 0
    made: list[dict[str, Any]] = []
    for team_uid, factory_uid, event_type, at, data in events:
        body: str | None = None
        for sub in subscriptions:
            if sub.team_uid != team_uid or not matches(sub.events, event_type):
                continue
            if sub.factory_uid is not None and sub.factory_uid != factory_uid:
                continue
            if body is None:
                body = _body(event_type, at, data)
            made.append(
                {
                    "kind": KIND,
                    "key": ids.new_id("evm"),
                    "destination": sub.uid,
                    "subject": sub.uid,
                    "payload": {"subscription_uid": sub.uid, "type": event_type, "body": body},
                }
            )
    await enqueue_many(conn, made)  # one executemany: a batch's events are hundreds
    return len(made)


def _body(event_type: str, at: datetime | str, data: Any) -> str:
    """The body subscribers receive, `{type, timestamp, data}`, as text (what is signed)."""
    if isinstance(at, str):
        at = from_sqlite_time(at)
    if isinstance(data, str):  # JSON text already (the evaluator's batches)
        data = msgspec.Raw(data.encode())
    return msgspec.json.encode({"type": event_type, "timestamp": at, "data": data}).decode()
