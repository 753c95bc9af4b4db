"""Where the evaluator's batches spend their time: each stage's wall time, and each
statement's wall time: on SQLite beside the CPU its thread spent on it, on PostgreSQL with the
statement preparations apart (`prepare: ...`, called before each execution: asyncpg prepares a
statement text once on each connection it runs on and keeps it, so a call costs next to nothing
but where the text changes from batch to batch or the connection has not run it yet)
(`evaluator_bench one --stages`).

The consumer plans a batch while the one before it is written, so throughput is set by the
slower of the two stages; a statement whose wall time is far above its thread's CPU waited
(for the write lock, the GIL or a core) rather than worked. On PostgreSQL a statement's wall
time also holds the time the event loop took to come back to it from planning the next
batch. The functions are wrapped for the measured span only and restored after; the wrappers
cost a few microseconds a batch and a statement, not a delivery.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_cursor,
)

from gateway.foundation.store import sqlite_driver
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.evaluator.delivery_runs import RunBatch
from gateway.webhook_gateway.transports.redis_stream.source import StreamSource

WRITE = "write (transaction, acknowledgement, commit gap)"


@dataclass
class Span:
    calls: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0  # the thread's own CPU (statements only: the consumer's thread is shared)


@dataclass
class StageTimes:
    stages: dict[str, Span] = field(default_factory=lambda: defaultdict(Span))
    statements: dict[str, Span] = field(default_factory=lambda: defaultdict(Span))
    planned: int = 0  # deliveries planned
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def report(self, deliveries: int) -> dict[str, Any]:
        def per(span: Span) -> dict[str, Any]:
            row = {
                "calls": span.calls,
                "wall_s": round(span.wall_s, 3),
                "wall_us_per_delivery": round(span.wall_s / max(deliveries, 1) * 1e6, 1),
            }
            if span.cpu_s:
                row["cpu_us_per_delivery"] = round(span.cpu_s / max(deliveries, 1) * 1e6, 1)
            return row

        ranked = sorted(self.statements.items(), key=lambda kv: -kv[1].wall_s)
        return {
            "batches": self.stages["plan"].calls,
            "deliveries_per_batch": round(self.planned / max(self.stages["plan"].calls, 1)),
            "stages": {name: per(span) for name, span in self.stages.items()},
            "statements": {sql: per(span) for sql, span in ranked[:12]},
        }


def _statement_key(operation: str) -> str:
    """A statement's kind: its first words up to the column list (`INSERT INTO runs`)."""
    return " ".join(operation.split("(", 1)[0].split()[:4])


@contextmanager
def timed_stages() -> Iterator[StageTimes]:
    times = StageTimes()
    plan, write = Consumer._plan, Consumer._write
    statement = sqlite_driver._whole_statement
    pg_execute = AsyncAdapt_asyncpg_cursor._prepare_and_execute
    pg_executemany = AsyncAdapt_asyncpg_cursor._executemany
    pg_prepare = AsyncAdapt_asyncpg_connection._prepare

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function` (a coroutine function), its calls' wall time added to stage `name`."""

        async def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                _add(times.stages[name], time.perf_counter() - started)

        return timed_call

    async def timed_plan(self: Consumer, entries: Sequence[Any], ahead: bool = False) -> Any:
        started = time.perf_counter()
        try:
            return await plan(self, entries, ahead)
        finally:
            _add(times.stages["plan"], time.perf_counter() - started)
            times.planned += len(entries)

    def timed_statement(conn: Any, operation: str, parameters: Any, many: bool = False) -> Any:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return statement(conn, operation, parameters, many)
        finally:
            wall, spent = time.perf_counter() - started, time.thread_time() - cpu
            with times._lock:
                _add(times.statements[_statement_key(operation)], wall, spent)

    def timed_pg(function: Callable[..., Any], prefix: str = "") -> Callable[..., Any]:
        """A PostgreSQL cursor's (or connection's) coroutine, its wall time by statement."""

        async def timed_call(self: Any, operation: str, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(self, operation, *args)
            finally:
                key = prefix + _statement_key(operation)
                _add(times.statements[key], time.perf_counter() - started)

        return timed_call

    patches: list[tuple[Any, str, Callable[..., Any]]] = [
        (Consumer, "_plan", timed_plan),
        (Consumer, "_write", timed(WRITE, write)),
        # parts of the write: the log rows (the claim), the runs' rows, the acknowledgement
        (delivery_log, "log_new", timed("  the delivery log's rows", delivery_log.log_new)),
        (RunBatch, "write", timed("  the runs and their rows", RunBatch.write)),
        (StreamSource, "acknowledge", timed("  acknowledged (Redis)", StreamSource.acknowledge)),
        (sqlite_driver, "_whole_statement", timed_statement),
        (AsyncAdapt_asyncpg_cursor, "_prepare_and_execute", timed_pg(pg_execute)),
        (AsyncAdapt_asyncpg_cursor, "_executemany", timed_pg(pg_executemany)),
        (AsyncAdapt_asyncpg_connection, "_prepare", timed_pg(pg_prepare, "prepare: ")),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield times
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _add(span: Span, wall: float, cpu: float = 0.0) -> None:
    span.calls += 1
    span.wall_s += wall
    span.cpu_s += cpu
