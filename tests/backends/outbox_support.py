"""Shared by the outbox and de-duplication look-up tests: a migrated SQLite store with its outbox
beside it, rows appended there, an embedded gateway with the least de-duplication memory, and
numbered submissions to its backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import NamedTuple

from gateway.foundation.backends.contract import DeliveryRecord, Submission, Target, shard_of
from gateway.foundation.backends.identity_index import ensure_identity_index
from gateway.foundation.backends.seen_deliveries import MIN_EXACT
from gateway.foundation.services import Services
from gateway.foundation.store import Database, create_database, migrate
from gateway.kernel import ids
from gateway.webhook_gateway.ingress.pipeline import Ingress
from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
from gateway.webhook_gateway.transports.outbox import file as outbox
from gateway.webhook_gateway.transports.outbox.file import Outbox, OutboxAppender, OutboxLookups
from tests.conftest import make_settings
from tests.support import GatewayClient


class StoreWithOutbox(NamedTuple):
    database: Database
    appender: OutboxAppender
    lookups: OutboxLookups
    reader: Outbox


@asynccontextmanager
async def store_with_outbox(tmp_path: Path) -> AsyncIterator[StoreWithOutbox]:
    """A migrated store file (with the de-duplication index the embedded backend makes when it
    starts), the outbox's writer, the writer's look-ups and the outbox's reader; all closed on
    exit."""
    store = str(tmp_path / "g.db")
    database = create_database(f"sqlite+aiosqlite:///{store}")
    await migrate(database)
    await ensure_identity_index(database)
    path = store + outbox.SUFFIX
    appender = OutboxAppender(path)
    lookups = OutboxLookups(path, store)
    reader = Outbox(path, store)
    try:
        yield StoreWithOutbox(database, appender, lookups, reader)
    finally:
        lookups.close()
        appender.close()
        await reader.close()
        await database.close()


def append_to_outbox(appender: OutboxAppender, records: Sequence[DeliveryRecord]) -> None:
    appender.append([outbox.row_of(r) for r in records])


def prune_round(outbox: StoreWithOutbox) -> int:
    """A whole prune round, slice after slice as the writer runs it: how many rows it deleted."""
    removed, after = 0, 0
    while True:
        pruned = outbox.lookups.moved_slice(after)
        outbox.appender.delete(pruned.moved)
        removed += len(pruned.moved)
        if pruned.resume_after is None:
            return removed
        after = pruned.resume_after


async def send_numbered(
    services: Services, numbers: Sequence[int], webhook: str | None = None, at_once: int = 2000
) -> list[tuple[str, str]]:
    """Submits identity evt-n to webhook n // 50 (each webhook's 50 under its limit), or all of
    them to `webhook`, `at_once` concurrently; (verdict, delivery id) of each."""
    assert isinstance(services.ingress, Ingress)
    backend = services.ingress.backend
    assert isinstance(backend, MemoryBackend)
    outcomes = []
    for start in range(0, len(numbers), at_once):
        copies = [
            Submission(
                Target(uid, 1, shard_of(uid)),
                ids.new_id("dlv"), f"evt-{n}", b"{}", True,
            )
            for n in numbers[start : start + at_once]
            for uid in [webhook or f"whk_{n // 50}"]
        ]  # fmt: skip
        done = await asyncio.gather(*(backend.submit(c) for c in copies))
        outcomes += [(o.verdict.name, str(o.delivery_id)) for o in done]
    return outcomes


@contextmanager
def gateway_with_least_memory(url: str) -> Iterator[GatewayClient]:
    """An embedded gateway on the store at `url` (a SQLite file, or a PostgreSQL database of the
    test's own), evaluator off, holding the fewest de-duplication entries exactly (MIN_EXACT)."""
    settings = make_settings(url, evaluator="off", dedup_memory=str(MIN_EXACT))
    with GatewayClient.running(settings) as client:
        yield client
