"""Writing the event log: `record_event` / `record_events`, in the caller's transaction, so an
event commits with the change it tells or not at all (an outbox: a crash never loses one, nor
invents one). Subscriptions' messages are made in the same transaction (`fan_out`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec
import orjson
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import EVENT_TYPES
from gateway.foundation.events.fan_out import fan_out
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert, Prepared
from gateway.foundation.store.types import utcnow

EVENTS = BulkInsert(t.events, ("team_uid", "factory_uid", "type", "at", "data"))
_JSON = msgspec.json.Encoder()


@dataclass(slots=True)
class NewEvent:
    """One event to record: `data` is its type's Struct (catalogue.EVENT_TYPES) or the plain
    JSON object of one."""

    type: str
    team_uid: str | None
    data: Any
    factory_uid: str | None = None
    at: datetime | None = None


async def record_event(
    conn: AsyncConnection,
    event_type: str,
    *,
    team_uid: str | None,
    data: Any,
    factory_uid: str | None = None,
    at: datetime | None = None,
) -> None:
    """Records one event of `event_type` for `team_uid` in the caller's transaction."""
    await record_events(conn, [NewEvent(event_type, team_uid, data, factory_uid, at)])


async def record_events(conn: AsyncConnection, events: Sequence[NewEvent]) -> None:
    """Records `events` in one statement (the evaluator's batches write hundreds): each one's
    data encoded to JSON text once, for the row and for its subscribers' messages alike."""
    if not events:
        return
    encode_time = EVENTS.encoder(conn.dialect, "at")
    now = encode_time(utcnow())
    values: list[tuple[Any, ...]] = []
    for event in events:
        if event.type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {event.type!r}")
        at = now if event.at is None else encode_time(event.at)
        # a Struct by msgspec (what `to_builtins` then orjson made of it, in one step); a plain
        # object as before, by orjson
        data = (orjson.dumps if isinstance(event.data, dict) else _JSON.encode)(event.data)
        values.append((event.team_uid, event.factory_uid, event.type, at, data.decode()))
    await record_encoded(conn, values)


async def record_encoded(conn: AsyncConnection, values: list[tuple[Any, ...]]) -> None:
    """Events already in the driver's form, in the column order of `EVENTS` (the evaluator's
    batches: their times are encoded once for the runs and the events alike, their data as JSON
    text)."""
    if values:
        await EVENTS.insert(conn, Prepared("type", [], values))
        await fan_out(conn, values)  # SQLite's times stay text until a subscriber wants one


def body(event_type: str, at: datetime, data: Any) -> bytes:
    """An event as subscribers and the stream receive it: `{type, timestamp, data}`."""
    return msgspec.json.encode({"type": event_type, "timestamp": at, "data": data})


RETENTION = timedelta(hours=48)  # the stream resumes from any event of the last 24 h, and more
PRUNE_BATCH = 10_000


async def prune(conn: AsyncConnection, now: datetime | None = None) -> int:
    """Removes events older than RETENTION, at most PRUNE_BATCH per call (in number order:
    the oldest first); how many. Their subscriptions' messages live on in the outbound queue."""
    cutoff = (now or utcnow()) - RETENTION
    e = t.events
    oldest = select(e.c.seq).where(e.c.at < cutoff).order_by(e.c.seq).limit(PRUNE_BATCH)
    numbers = [seq for (seq,) in await conn.execute(oldest)]
    if not numbers:
        return 0
    await conn.execute(delete(e).where(e.c.seq <= numbers[-1], e.c.at < cutoff))
    return len(numbers)
