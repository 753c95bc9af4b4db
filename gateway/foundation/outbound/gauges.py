"""The outbound backlog for /metrics, read from the store at scrape time like the evaluator's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gateway.foundation.outbound.queue import backlog
from gateway.foundation.store import Database

Gauges = Callable[[], Awaitable[dict[str, float]]]


def with_backlog(database: Database, others: Gauges | None) -> Gauges:
    """`others`' gauges and `gateway_outbound_backlog`."""

    async def gauges() -> dict[str, float]:
        values = await others() if others is not None else {}
        async with database.read() as conn:
            values["gateway_outbound_backlog"] = float(await backlog(conn))
        return values

    return gauges
