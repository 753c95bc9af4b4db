"""The delivery consumer plans a batch while the one before it is written. A work item the
earlier batch makes is the later one's to continue, as if it were stored: the later batch
writes in its one transaction, never falling back to one transaction per delivery (a batch of
1,024 GitHub deliveries that did took ~15 s to evaluate, docs/performance.md).

The source is the gateway's own, read one batch at a time: the first batch's transaction waits
until the second batch is planned, which is what a busy consumer does anyway."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.deliveries.trace import TraceWrites
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.evaluator.delivery_runs import RunStarter
from gateway.webhook_gateway.transports.contract import Claim, Entry, Source
from tests.connections import signing
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    runs,
    set_repositories,
    trigger,
)
from tests.evaluator.test_delivery_consumer import _source
from tests.ingress.hooks import gateway_on_transport
from tests.providers.conftest import GithubExamples, github_examples
from tests.support import GatewayClient, World

__all__ = ["github_examples"]


@pytest.fixture(params=["memory+sqlite", "redis+postgresql"])
def gwc(
    request: pytest.FixtureRequest,
    sqlite_store: Callable[..., str],
    redis_url: str,
    redis_prefix: str,
) -> Iterator[GatewayClient]:
    with gateway_on_transport(request, request.param, sqlite_store, redis_url, redis_prefix) as gw:
        yield gw


class InBatches:
    """The gateway's source, handing out its entries in the batches given (by delivery id);
    the first batch's claim (in its transaction) waits until the next batch is planned. Counts
    the batch transactions."""

    def __init__(self, source: Source, batches: list[list[str]]) -> None:
        self.source = source
        self.batches = batches
        self.read_ahead: list[Entry] = []
        self.planned = 0
        self.next_planned = asyncio.Event()
        self.transactions = 0

    async def read(self) -> list[Entry]:
        while self.batches:
            wanted = self.batches[0]
            self.read_ahead += await self.source.read()
            found = [e for e in self.read_ahead if e.record.delivery_id in wanted]
            if len(found) == len(wanted):
                self.batches.pop(0)
                self.read_ahead = [e for e in self.read_ahead if e not in found]
                return found
        await asyncio.sleep(0.01)
        return []

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        claim = self.source.claim(entries, dialect, traces)
        self.planned += 1
        first = self.planned == 1
        if not first:
            self.next_planned.set()

        async def claimed(conn: AsyncConnection) -> set[str]:
            self.transactions += 1
            if first:
                await asyncio.wait_for(self.next_planned.wait(), 10)
            return await claim(conn)

        return claimed

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        await self.source.acknowledge(entries)

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self.read_ahead += entries
        await self.source.retry_later(entries)

    def stop_waiting(self) -> None:
        self.source.stop_waiting()


def test_a_batch_continues_the_work_items_of_the_batch_written_before_it(
    gwc: GatewayClient, github_examples: GithubExamples
) -> None:
    world = World.create(gwc)
    set_repositories(gwc, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
    made = connect(world, "github")
    labeled = next(p for p in github_examples["issues"] if p["action"] == "labeled")
    first, *later = [
        deliver(gwc, made, signing.github(made["secret"], "issues", labeled)) for _ in range(3)
    ]

    async def evaluate(services: Services) -> InBatches:
        source = InBatches(_source(services), [[first], later])
        consumer = Consumer(services.database, source, RunStarter(PLATFORM))
        task = asyncio.create_task(consumer.run())
        try:
            for _ in range(400):
                if consumer.processed >= 3:
                    break
                await asyncio.sleep(0.025)
        finally:
            consumer.stop()
            await asyncio.wait_for(task, 10)
        return source

    source = gwc.run(evaluate)
    assert source.planned == 2  # the second batch was planned while the first was written
    assert source.transactions == 2  # each batch in its one transaction
    (run,) = runs(gwc, first)
    assert runs(gwc, later[0]) == runs(gwc, later[1]) == []

    async def follow_ups(services: Services) -> list[Any]:
        f = t.work_item_follow_ups
        async with services.database.read() as conn:
            rows = await conn.execute(select(f.c.delivery_id).where(f.c.run_id == run.run_id))
            return sorted(row.delivery_id for row in rows)

    assert gwc.run(follow_ups) == sorted(later)
