"""`delivery.rejected` events (docs/events.md#delivery-rejected): every refusal of a known
webhook or connection is counted in one, off the ingress hot path, coalesced per source and
reason.

- Refusals ingress logs as records (the first 60 per source per rolling minute, while the
  backlog has room) reach the log through the evaluator; their events are made there, in the
  same transaction, one per source and reason of a batch with the batch's `count`.
- Refusals past that cap, and those refused because the backlog is full, get no record: the
  backend counts them per source and reason (in memory, or in the Redis script that refused
  them: no extra round trip), and the refusal flusher (refusal_flusher.py) writes one event per
  source and reason every FLUSH_S, with the count since the last.

So a flood of refused requests is a bounded number of events, never one per request.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import Any

from msgspec import UNSET
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import DeliveryRecord, RefusalCount
from gateway.foundation.events.catalogue import DeliveryRejectedData
from gateway.foundation.events.log import NewEvent, record_events
from gateway.foundation.store import tables as t


async def record_rejections(
    conn: AsyncConnection, records: Iterable[DeliveryRecord], logged: Set[str]
) -> None:
    """The events of the refused records among `logged` (those this transaction logs)."""
    groups: dict[tuple[str, str], list[DeliveryRecord]] = {}
    for record in records:
        if record.reason is not None and record.delivery_id in logged:
            groups.setdefault((record.webhook_uid, str(record.reason)), []).append(record)
    counts, only = [], {}
    for (source, reason), refused in groups.items():
        times = [record.received_at for record in refused]
        counts.append(RefusalCount(source, reason, len(refused), min(times), max(times)))
        if len(refused) == 1:
            only[(source, reason)] = refused[0].delivery_id
    await record_refusal_counts(conn, counts, only)


async def record_refusal_counts(
    conn: AsyncConnection,
    counts: list[RefusalCount],
    delivery_ids: dict[tuple[str, str], str] | None = None,
) -> None:
    """One event per count (`delivery_ids`: the one delivery a count of 1 names)."""
    if not counts:
        return
    owners = await _owners(conn, {c.source_uid for c in counts})
    events = []
    for c in counts:
        if c.source_uid not in owners:
            continue  # deleted since
        team_uid, factory_uid = owners[c.source_uid]
        data = DeliveryRejectedData(
            source_uid=c.source_uid,
            factory_uid=factory_uid,
            reason=c.reason,
            count=c.count,
            first_at=c.first_at,
            last_at=c.last_at,
            delivery_id=(delivery_ids or {}).get((c.source_uid, c.reason), UNSET),
        )
        events.append(NewEvent("delivery.rejected", team_uid, data, factory_uid, c.last_at))
    await record_events(conn, events)


async def _owners(conn: AsyncConnection, sources: set[str]) -> dict[str, tuple[str, Any]]:
    """source uid -> (team, factory or None): webhooks through their factory, connections."""
    w, f, c = t.webhooks, t.factories, t.provider_connections
    webhooks = select(w.c.uid, f.c.team_uid, w.c.factory_uid).join(f, f.c.uid == w.c.factory_uid)
    found = {
        uid: (team, factory)
        for uid, team, factory in await conn.execute(webhooks.where(w.c.uid.in_(sorted(sources))))
    }
    connections = select(c.c.uid, c.c.team_uid).where(c.c.uid.in_(sorted(sources - set(found))))
    found.update({uid: (team, None) for uid, team in await conn.execute(connections)})
    return found
