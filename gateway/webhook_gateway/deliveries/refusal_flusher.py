"""The refusal flusher: every FLUSH_S, the counts of refusals no record tells
(gateway/foundation/backends: past the reject-log cap, or with the backlog full) become
`delivery.rejected` events, one per source and reason, in one transaction; nothing is written when
there is nothing to tell. It runs where the counts are: beside the embedded backend (the serving
process), beside each Redis evaluator (they take each count once)."""

from __future__ import annotations

import asyncio
import logging

from gateway.foundation.backends.contract import Refusals
from gateway.foundation.store import Database
from gateway.kernel.event_waits import pause
from gateway.webhook_gateway.deliveries.rejection_events import record_refusal_counts

log = logging.getLogger("gateway.evaluator")

FLUSH_S = 10.0  # the coalescing window: at most one event per source and reason this often


async def flush(database: Database, refusals: Refusals) -> int:
    """Record what was counted since the last flush; the number of counts recorded. Counts
    that could not be recorded are given back for the next one."""
    counts = await refusals.take()
    if not counts:
        return 0
    try:
        async with database.transaction() as conn:
            await record_refusal_counts(conn, counts)
    except BaseException:
        await refusals.give_back(counts)
        raise
    return len(counts)


async def flush_forever(database: Database, refusals: Refusals) -> None:
    while True:
        await pause(FLUSH_S)  # read each time: tests shorten it
        try:
            await flush(database, refusals)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the counts wait for the next flush
            log.warning("delivery.rejected events not written: %s", exc)
