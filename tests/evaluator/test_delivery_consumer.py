"""The delivery consumer on each way deliveries wait for it: every outcome logged, runs started
once, the log API (pending first, then evaluated), pagination and retention."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import msgspec
import pytest
from sqlalchemy import func, insert, select

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.redis_clients import connect
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import AutomationCreate
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunStarter
from gateway.webhook_gateway.transports.contract import Entry, Source
from gateway.webhook_gateway.transports.outbox.file import Outbox
from gateway.webhook_gateway.transports.outbox.source import OutboxSource
from gateway.webhook_gateway.transports.pending_log.source import PendingSource
from gateway.webhook_gateway.transports.redis_stream.source import StreamSource
from tests.ingress.hooks import add_webhook, gateway_on_transport
from tests.support import GatewayClient, World

# where deliveries wait, with the store each waits for: the outbox beside a SQLite file, the
# delivery log itself (the embedded backend on PostgreSQL), the Redis streams and the Redis
# Cluster's streams (beside PostgreSQL, as deployed)
TRANSPORTS = ["memory+sqlite", "memory+postgresql", "redis+postgresql", "redis-cluster+postgresql"]


@pytest.fixture(params=TRANSPORTS)
def gwc(
    request: pytest.FixtureRequest,
    sqlite_store: Callable[..., str],
    redis_url: str,
    redis_prefix: str,
) -> Iterator[GatewayClient]:
    with gateway_on_transport(request, request.param, sqlite_store, redis_url, redis_prefix) as gw:
        yield gw


def _source(services: Services, idle_wait: float = 0.01) -> Source:
    settings = services.settings
    if settings.uses_redis:
        assert settings.redis_url
        redis = connect(settings.redis_url, cluster=settings.redis_cluster)
        services.lifetime.on_close(redis.aclose)
        keyspace = KeySpace(settings.redis_prefix, per_shard_backlog=settings.redis_cluster)
        return StreamSource(redis, keyspace, idle_wait=idle_wait)
    if isinstance(services.pending_deliveries, Outbox):  # embedded on a SQLite file
        return OutboxSource(services.pending_deliveries, idle_wait=idle_wait)
    return PendingSource(services.database, idle_wait=idle_wait)


def drain(
    client: GatewayClient,
    starter: RunStarter | None = None,
    on_runs_started: Callable[[], None] | None = None,
) -> int:
    async def run(services: Services) -> int:
        source = _source(services)
        consumer = Consumer(
            services.database, source, starter or RunStarter(PLATFORM), on_runs_started
        )
        empty = 0
        for _ in range(40):  # until three reads in a row find nothing more
            entries = await consumer.source.read()
            if entries:
                await consumer.process(entries)
                empty = 0
            elif consumer.processed:
                empty += 1
                if empty == 3:
                    break
        return consumer.processed

    return client.run(run)


def automation_for_everything(client: GatewayClient, world: World, webhook_uid: str) -> str:
    async def run(services: Services) -> str:
        body = {
            "name": "every delivery",
            "prompt": "Handle it.",
            "triggers": [
                {
                    "provider": "webhook",
                    "event": "received",
                    "filter": {"webhook_ids": [webhook_uid]},
                }
            ],
        }
        body["enabled"] = True
        async with services.database.transaction() as conn:
            spec = msgspec.convert(body, AutomationCreate)
            made = await automations.create_automation(conn, world.factory_uid, spec)
        return made.uid

    return client.run(run)


def runs_of(client: GatewayClient, delivery_ids: list[str]) -> list[tuple[str, str, str]]:
    """(delivery id, automation uid, run id) of the runs these deliveries started."""

    async def run(services: Services) -> list[tuple[str, str, str]]:
        r = t.runs
        query = select(r.c.delivery_id, r.c.automation_uid, r.c.run_id).where(
            r.c.delivery_id.in_(delivery_ids)
        )
        async with services.database.read() as conn:
            return [tuple(row) for row in await conn.execute(query)]  # type: ignore[misc]

    return client.run(run)


def test_every_outcome_is_logged_and_runs_start_once(gwc: GatewayClient) -> None:
    world = World.create(gwc)
    hook = add_webhook(gwc, world)
    automation = automation_for_everything(gwc, world, hook.uid)
    path, auth = hook.path, hook.auth
    ok = gwc.post(path, content=b'{"n": 1}', headers=auth).json()["delivery_id"]
    assert gwc.post(path, content=b'{"n": 1}', headers=auth).json()["delivery_id"] == ok
    assert gwc.post(path, content=b"{bad", headers=auth).status_code == 400
    assert gwc.post(path, content=b"{}", headers={"Authorization": "Bearer x"}).status_code == 401
    assert gwc.post(path, content=b"x" * 300_000).status_code == 413
    assert gwc.post("/webhooks/w/wh_nope", content=b"{}").status_code == 404

    # read your writes: the 202's id is found before the evaluator ran, pending evaluation
    base = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"
    early = world.api("GET", f"{base}/{ok}")
    assert early.status_code == 200, early.text
    assert early.json()["evaluation"] == "pending" and early.json()["payload"] == {"n": 1}
    assert early.json()["evaluated_at"] is None
    assert early.json()["runs"] == []
    listed_early = world.api("GET", base).json()["deliveries"]
    assert [
        (i["delivery_id"], i["evaluation"]) for i in listed_early if i["label"] == "Accepted"
    ] == [(ok, "pending")]

    # embedded on PostgreSQL: rejections are in the log at once, only the accepted one waits for
    # the evaluator; through a Redis stream or the outbox of a SQLite file all five entries do
    assert drain(gwc) in (1, 5)
    started = runs_of(gwc, [ok])
    assert [(d, a) for d, a, _ in started] == [(ok, automation)]  # duplicates start nothing

    listed = world.api("GET", base)
    assert listed.status_code == 200, listed.text
    items = listed.json()["deliveries"]
    labels = sorted(item["label"] for item in items)
    assert labels == sorted(
        [
            "Accepted",
            "Duplicate",
            "Rejected (invalid JSON)",
            "Rejected (auth)",
            "Rejected (too large)",
        ]
    )
    accepted = next(i for i in items if i["label"] == "Accepted")
    assert accepted["delivery_id"] == ok and accepted["size"] == 8
    assert accepted["evaluation"] == "evaluated"
    assert accepted["runs"] == [{"automation_uid": automation, "run_id": started[0][2]}]
    assert all(i["evaluation"] is None for i in items if i["label"] != "Accepted")
    assert next(i for i in items if i["label"] == "Rejected (too large)")["size"] == 300_000
    detail = world.api("GET", f"{base}/{ok}").json()
    assert detail["payload"] == {"n": 1} and detail["evaluation"] == "evaluated"
    assert detail["received_at"] <= detail["evaluated_at"]
    dup = next(i for i in items if i["label"] == "Duplicate")
    dup_detail = world.api("GET", f"{base}/{dup['delivery_id']}").json()
    assert "payload" not in dup_detail

    # redelivery of the same entries (e.g. after a crash before the ack) changes nothing
    async def replay(services: Services) -> tuple[int, int]:
        source = _source(services)
        async with services.database.read() as conn:
            query = select(t.deliveries).where(t.deliveries.c.webhook_uid == hook.uid)
            rows = (await conn.execute(query)).all()
            records = [
                DeliveryRecord(
                    r.delivery_id,
                    r.webhook_uid,
                    r.received_at,
                    r.size,
                    Label(r.label),
                    r.identity,
                    r.duplicate_of,
                    r.payload,
                )
                for r in rows
            ]
            accepted = [
                AcceptedDelivery(r.delivery_id, r.webhook_uid, r.received_at, r.payload)
                for r in records
                if r.label is Label.ACCEPTED and r.payload is not None
            ]
            batch = await RunStarter(PLATFORM).plan(conn, accepted)
        assert batch.deliveries == 1  # it matches, as before
        async with services.database.transaction() as conn:
            claimed = await source.claim([Entry(None, r) for r in records], conn.dialect)(conn)
            started = await batch.write(conn, claimed)
        return len(claimed), len(started)

    assert gwc.run(replay) == (0, 0)
    assert runs_of(gwc, [ok]) == started


def test_a_batch_that_started_runs_is_announced(gwc: GatewayClient) -> None:
    """What wakes the runners' long-polls in this process (Services.runs_queued)."""
    world = World.create(gwc)
    hook = add_webhook(gwc, world)
    announced: list[int] = []

    def announce() -> None:
        announced.append(len(announced))

    assert gwc.post(hook.path, content=b'{"n": 0}', headers=hook.auth).status_code == 202
    assert drain(gwc, on_runs_started=announce) == 1
    assert announced == []  # no automation: no run, nothing to announce
    automation_for_everything(gwc, world, hook.uid)
    sent = gwc.post(hook.path, content=b'{"n": 1}', headers=hook.auth).json()["delivery_id"]
    # a new evaluator on the outbox reads the first delivery again until ingress pruned it (it
    # starts nothing: logged already)
    assert drain(gwc, on_runs_started=announce) in (1, 2)
    assert announced == [0] and len(runs_of(gwc, [sent])) == 1


def test_list_pagination_access_and_prune(gwc: GatewayClient) -> None:
    world = World.create(gwc)
    hook = add_webhook(gwc, world)
    for i in range(7):
        assert gwc.post(hook.path, content=str(i).encode(), headers=hook.auth).status_code == 202
    drain(gwc)
    base = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"
    seen: list[tuple[datetime, str]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = world.api("GET", base, params=params).json()
        seen += [
            (datetime.fromisoformat(d["received_at"]), d["delivery_id"]) for d in page["deliveries"]
        ]
        cursor = page["page_info"]["next_cursor"]
        if not cursor:
            break
    assert len(seen) == 7 and len({delivery_id for _, delivery_id in seen}) == 7
    # newest first, by receive time, then id (ids carry only milliseconds: two deliveries within
    # one millisecond have random relative order)
    assert seen == sorted(seen, reverse=True)
    assert world.api("GET", base, params={"limit": 101}).status_code == 400
    assert world.api("GET", base, params={"cursor": "forged"}).status_code == 400
    assert world.api("GET", base, headers=world.stranger).status_code == 403
    assert world.api("GET", base, headers={}).status_code == 401
    other = f"/factory/{world.factory_uid}/webhooks/wh_missing/deliveries"
    assert world.api("GET", other).status_code == 404
    assert world.api("GET", f"{base}/dlv_missing").status_code == 404

    async def age_and_prune(services: Services) -> tuple[int, int]:
        old = utcnow() - timedelta(days=8)
        async with services.database.transaction() as conn:
            rows = [
                {
                    "delivery_id": f"dlv_old{hook.uid[-8:]}{i:03d}",
                    "webhook_uid": hook.uid,
                    "received_at": old - timedelta(seconds=i),
                    "size": 1,
                    "label": "Accepted",
                }
                for i in range(60)
            ]
            await conn.execute(insert(t.deliveries), rows)
            removed = await delivery_log.prune(conn)
            left = (
                await conn.execute(
                    select(func.count()).where(t.deliveries.c.webhook_uid == hook.uid)
                )
            ).scalar_one()
        return removed, left

    removed, left = gwc.run(age_and_prune)
    # 67 records: the 7 recent ones stay (< 7 days), and of the old ones the newest 43 complete
    # the 50 always kept
    assert (removed, left) == (17, 50)


class FailingOnce(RunStarter):
    """A starter whose first plan fails (the store went away for a moment)."""

    def __init__(self) -> None:
        super().__init__(PLATFORM)
        self.failures = 0

    async def plan(self, conn: Any, batch: Any, unwritten: Any = ()) -> Any:
        if not self.failures:
            self.failures += 1
            raise ConnectionError("store unreachable")
        return await super().plan(conn, batch, unwritten)


def test_a_batch_that_could_not_be_planned_is_read_again(gwc: GatewayClient) -> None:
    world = World.create(gwc)
    hook = add_webhook(gwc, world)
    automation_for_everything(gwc, world, hook.uid)
    sent = [
        gwc.post(hook.path, content=b'{"n": %d}' % i, headers=hook.auth).json()["delivery_id"]
        for i in range(3)
    ]

    async def run(services: Services) -> int:
        starter = FailingOnce()
        consumer = Consumer(services.database, _source(services), starter)
        task = asyncio.create_task(consumer.run())
        try:
            for _ in range(200):  # the consumer waits 1 s after the failure
                if consumer.runs_started >= 3:
                    break
                await asyncio.sleep(0.05)
        finally:
            consumer.stop()
            await asyncio.wait_for(task, 10)
        assert starter.failures == 1
        return consumer.runs_started

    assert gwc.run(run) == 3
    assert sorted(d for d, _, _ in runs_of(gwc, sent)) == sorted(sent)


def test_stopping_ends_an_idle_wait(gwc: GatewayClient) -> None:
    """A consumer with nothing to read stops at once, not after its source's idle wait (an
    hour here): shutting a gateway down does not wait for it."""

    async def run(services: Services) -> None:
        consumer = Consumer(
            services.database, _source(services, idle_wait=3600), RunStarter(PLATFORM)
        )
        task = asyncio.create_task(consumer.run())
        await asyncio.sleep(0.5)  # started, read nothing, waiting
        assert not task.done()
        consumer.stop()
        await asyncio.wait_for(task, 30)  # a guard: without the wake-up, an hour

    gwc.run(run)


def test_the_progress_line_says_how_many_batches_carried_the_deliveries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An operator reads the batch size off it: deliveries / batches."""
    consumer = Consumer(None, None, RunStarter(PLATFORM))  # type: ignore[arg-type]
    consumer.processed, consumer.batches, consumer.runs_started = 4096, 4, 4000
    consumer._next_report = 0.0  # the interval is over
    with caplog.at_level("INFO", logger="gateway.evaluator"):
        consumer._maybe_report()
    (line,) = [r.getMessage() for r in caplog.records if "delivery consumer" in r.getMessage()]
    assert line.startswith("delivery consumer: 4096 deliveries (")
    assert "/s) in 4 batches, 4000 runs started in the last" in line
    caplog.clear()
    consumer.processed, consumer.batches = 4100, 5
    consumer._next_report = 0.0
    with caplog.at_level("INFO", logger="gateway.evaluator"):
        consumer._maybe_report()
    assert "4 deliveries" in caplog.text and "in 1 batches, 0 runs started" in caplog.text
