"""`delivery.rejected` events (docs/events.md), from the refused deliveries the evaluator logs.

Ingress records a refusal (the first 60 per source per minute; beyond that it only counts them)
without SQL; the evaluator writes those records into the log. Their events are made there, in
the same transaction, one per source and reason of a batch with the batch's `count`: a flood
of failed signatures is a few events, not one per request.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import Any

from msgspec import UNSET
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.contract import DeliveryRecord
from gateway.events.catalogue import DeliveryRejectedData
from gateway.events.log import NewEvent, record_events
from gateway.store import tables as t


async def record_rejections(
    conn: AsyncConnection, records: Iterable[DeliveryRecord], logged: Set[str]
) -> None:
    """The events of the refused records among `logged` (those this transaction logs)."""
    groups: dict[tuple[str, str], list[DeliveryRecord]] = {}
    for record in records:
        if record.reason is not None and record.delivery_id in logged:
            groups.setdefault((record.webhook_uid, str(record.reason)), []).append(record)
    if not groups:
        return
    owners = await _owners(conn, {source for source, _ in groups})
    events = []
    for (source, reason), refused in groups.items():
        if source not in owners:
            continue  # deleted since
        team_uid, factory_uid = owners[source]
        times = [record.received_at for record in refused]
        data = DeliveryRejectedData(
            source_uid=source,
            factory_uid=factory_uid,
            reason=reason,
            count=len(refused),
            first_at=min(times),
            last_at=max(times),
            delivery_id=refused[-1].delivery_id if len(refused) == 1 else UNSET,
        )
        events.append(NewEvent("delivery.rejected", team_uid, data, factory_uid, max(times)))
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
