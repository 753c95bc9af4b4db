"""Reading the event log in order, for the live stream (and anything that follows it).

`seq` orders the log. On SQLite writers take turns, so events commit in `seq` order. On
PostgreSQL a number is taken at INSERT and transactions commit in any order: a reader that saw
seq 7 may later see 6 appear. So a reader moves only up to the `horizon`: the last number
before the first gap, unless that gap is older than `GRACE` (a rolled-back transaction leaves
a gap that never fills; the service's transactions last far less).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow

e = t.events
GRACE = timedelta(seconds=10)
SCAN = 2_000  # numbers looked at per horizon step


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    type: str
    at: datetime
    data: Any


async def latest(conn: AsyncConnection) -> int:
    """The highest number handed out so far (0 for an empty log)."""
    value = (await conn.execute(select(func.max(e.c.seq)))).scalar()
    return int(value or 0)


async def horizon(conn: AsyncConnection, after: int) -> int:
    """The highest number up to which every event after `after` is readable for good."""
    if conn.dialect.name == "sqlite":
        return await latest(conn)
    query = select(e.c.seq, e.c.at).where(e.c.seq > after).order_by(e.c.seq).limit(SCAN)
    rows = (await conn.execute(query)).all()
    reached, stale = after, utcnow() - GRACE
    for seq, at in rows:
        if seq != reached + 1 and at > stale:
            break  # a gap a transaction may still fill
        reached = seq
    return reached


async def next_page(
    conn: AsyncConnection, team_uids: Sequence[str], after: int, types: list[str], limit: int
) -> tuple[list[StoredEvent], int]:
    """The teams' events of `types` after `after` that are readable for good, oldest first, at
    most `limit`; and the number a follower has reached (the last one's on a full page, else
    the horizon: numbers skipped there are events of other teams or types)."""
    upto = await horizon(conn, after)
    if upto <= after:
        return [], after
    query = (
        select(e.c.seq, e.c.type, e.c.at, e.c.data)
        .where(e.c.team_uid.in_(team_uids), e.c.seq > after, e.c.seq <= upto, e.c.type.in_(types))
        .order_by(e.c.seq)
        .limit(limit)
    )
    found = [StoredEvent(*row) for row in await conn.execute(query)]
    return found, found[-1].seq if len(found) == limit else upto


async def oldest_after(conn: AsyncConnection, since: datetime) -> int:
    """The number before the first event recorded at or after `since` (a stream resumed from an
    id the log no longer holds starts there)."""
    # in number order, stopping at the first: what lies before it is what pruning removes
    query = select(e.c.seq).where(e.c.at >= since).order_by(e.c.seq).limit(1)
    value = (await conn.execute(query)).scalar()
    return await latest(conn) if value is None else int(value) - 1
