"""Readiness probes: is the store reachable, is Redis, and how far behind is the evaluator.

Each probe answers None when fine, or one line saying what is wrong. The evaluator's lag is the
age of the oldest accepted delivery not yet evaluated: the first entry of each shard stream
(Redis; entry ids start with their time in ms), the oldest outbox row not moved yet (embedded
on a SQLite file), or the oldest pending row of the delivery log (embedded on another store; a
partial index holds only those).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, text

from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.webhook_gateway.transports.outbox.file import Outbox

Probe = Callable[[], Awaitable[str | None]]
TIMEOUT_S = 2.0  # a probe that takes longer counts as failed


def store_probe(database: Database) -> Probe:
    async def probe() -> str | None:
        async with database.read() as conn:
            await conn.execute(text("SELECT 1"))
        return None

    return _bounded(probe, "store")


def redis_probe(redis: Any) -> Probe:
    async def probe() -> str | None:
        await redis.ping()
        return None

    return _bounded(probe, "redis")


def stream_lag_probe(redis: Any, streams: list[str], max_lag_s: float) -> Probe:
    async def probe() -> str | None:
        async with redis.pipeline(transaction=False) as pipe:
            for stream in streams:
                pipe.xrange(stream, count=1)
            firsts = await pipe.execute()
        stamps = [int(entries[0][0].split(b"-")[0]) for entries in firsts if entries]
        if not stamps:
            return None
        return _lag_message(time.time() - min(stamps) / 1000, max_lag_s)

    return _bounded(probe, "evaluator_lag")


def log_lag_probe(database: Database, max_lag_s: float, outbox: Outbox | None = None) -> Probe:
    """The oldest accepted delivery waiting: in the outbox when there is one, else pending in
    the delivery log."""
    d = t.deliveries

    async def probe() -> str | None:
        oldest: datetime | None
        if outbox is not None:
            oldest = await outbox.oldest_waiting()
        else:
            async with database.read() as conn:
                query = select(func.min(d.c.received_at)).where(d.c.evaluation == "pending")
                oldest = (await conn.execute(query)).scalar()
        if oldest is None:
            return None
        return _lag_message((datetime.now(UTC) - oldest).total_seconds(), max_lag_s)

    return _bounded(probe, "evaluator_lag")


Gauges = Callable[[], Awaitable[dict[str, float]]]


def stream_gauges(redis: Any, backlog_keys: list[str], streams: list[str]) -> Gauges:
    """The backlog counters the scripts keep (one, or one per shard on Cluster), summed, and the
    age of the oldest waiting stream entry."""

    async def gauges() -> dict[str, float]:
        async with redis.pipeline(transaction=False) as pipe:
            for key in backlog_keys:
                pipe.get(key)
            for stream in streams:
                pipe.xrange(stream, count=1)
            replies = await pipe.execute()
        counts, firsts = replies[: len(backlog_keys)], replies[len(backlog_keys) :]
        backlog = sum(int(count or 0) for count in counts)
        stamps = [int(entries[0][0].split(b"-")[0]) for entries in firsts if entries]
        lag = max(0.0, time.time() - min(stamps) / 1000) if stamps else 0.0
        return {
            "gateway_evaluator_backlog": float(backlog or 0),
            "gateway_evaluator_lag_seconds": lag,
        }

    return gauges


def log_gauges(database: Database, outbox: Outbox | None = None) -> Gauges:
    """Accepted deliveries waiting for the evaluator (in the outbox when there is one, else
    pending rows of the delivery log) and the oldest one's age."""
    d = t.deliveries

    async def gauges() -> dict[str, float]:
        oldest: datetime | None
        if outbox is not None:
            count, oldest = await outbox.count_waiting(), await outbox.oldest_waiting()
        else:
            query = select(func.count(), func.min(d.c.received_at)).where(
                d.c.evaluation == "pending"
            )
            async with database.read() as conn:
                count, oldest = (await conn.execute(query)).one()
        lag = (datetime.now(UTC) - oldest).total_seconds() if oldest is not None else 0.0
        return {"gateway_evaluator_backlog": float(count), "gateway_evaluator_lag_seconds": lag}

    return gauges


def _lag_message(lag_s: float, max_lag_s: float) -> str | None:
    if lag_s <= max_lag_s:
        return None
    return (
        f"the oldest accepted delivery waits {lag_s:.0f} s for evaluation (limit {max_lag_s:.0f})"
    )


def _bounded(probe: Probe, name: str) -> Probe:
    async def bounded() -> str | None:
        try:
            return await asyncio.wait_for(probe(), TIMEOUT_S)
        except TimeoutError:
            return f"{name}: no answer within {TIMEOUT_S:.0f} s"
        except Exception as exc:  # unreachable, refused, broken: the probe says so
            return f"{name}: {type(exc).__name__}: {exc}"[:300]

    return bounded
