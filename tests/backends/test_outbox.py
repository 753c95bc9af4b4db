"""The embedded default's outbox beside a SQLite store: rows leave it only once the store's log
holds them, a batch moved twice starts no second run (a crash between the move and the prune),
and the delivery log API finds a delivery in one place or the other, once."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.dialects import sqlite

from gateway.foundation.backends.contract import DeliveryRecord, Label, Submission, Target, shard_of
from gateway.foundation.backends.delivery_rows import DELIVERIES, EVALUATED, PENDING, delivery_row
from gateway.foundation.backends.seen_deliveries import MIN_EXACT
from gateway.foundation.services import Services
from gateway.foundation.store import create_database
from gateway.foundation.store import tables as t
from gateway.kernel.rejections import Reason
from gateway.platform.run_start import PLATFORM
from gateway.webhook_gateway.evaluator.delivery_consumer import Consumer
from gateway.webhook_gateway.evaluator.delivery_runs import RunStarter
from gateway.webhook_gateway.ingress.body import MAX_BODY
from gateway.webhook_gateway.ingress.pipeline import Ingress
from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
from gateway.webhook_gateway.transports.outbox import file as outbox
from gateway.webhook_gateway.transports.outbox import source as source_module
from gateway.webhook_gateway.transports.outbox.file import Outbox, create_schema
from gateway.webhook_gateway.transports.outbox.source import OutboxSource
from tests.backends.outbox_support import (
    append_to_outbox,
    gateway_with_least_memory,
    prune_round,
    send_numbered,
    store_with_outbox,
)
from tests.conftest import make_settings
from tests.evaluator.test_delivery_consumer import automation_for_everything, runs_of
from tests.ingress.hooks import add_webhook
from tests.support import GatewayClient, World, scaled


def _record(i: int) -> DeliveryRecord:
    when = datetime(2026, 11, 24, 12, 0, 0, i, tzinfo=UTC)
    return DeliveryRecord(f"d-{i}", "wh-1", when, 2, Label.ACCEPTED, f"id-{i}", None, b"{}")


_AT = datetime(2026, 11, 24, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    "record",
    [
        DeliveryRecord("d-1", "wh-1", _AT, 9, Label.ACCEPTED, "id-1", None, b'{"a":1}', None,
                       b"content-type: application/json"),
        DeliveryRecord("d-2", "wh-1", _AT, 2, Label.ACCEPTED, None, None, b"{}"),
        DeliveryRecord("d-3", "wh-1", _AT, 9, Label.AUTH, None, None, b'{"a":1}',
                       Reason.SIGNATURE_MISMATCH, b"x-sig: 1"),
        DeliveryRecord("d-4", "wh-2", _AT, 2, Label.DUPLICATE, "id-1", "d-1"),
        DeliveryRecord("d-5", "wh-2", _AT.astimezone(timezone(timedelta(hours=2))), 2,
                       Label.ACCEPTED, "id-5", None, b"{}"),
    ],
    ids=["accepted", "accepted, no headers", "refused", "duplicate", "another zone"],
)  # fmt: skip
def test_an_outbox_row_is_the_log_row_it_stands_for(record: DeliveryRecord) -> None:
    """row_of builds directly what the delivery log's row of the record encodes to, moved into
    the outbox's columns: the evaluator moves it back into that log."""
    (log_values,) = DELIVERIES.encode(sqlite.dialect(), [delivery_row(record, PENDING)])
    in_outbox_columns = tuple(log_values[DELIVERIES.columns.index(c)] for c in outbox.COLUMNS)
    assert outbox.row_of(record) == in_outbox_columns


async def test_prune_removes_only_what_the_log_holds_and_never_reuses_a_seq(
    tmp_path: Path,
) -> None:
    async with store_with_outbox(tmp_path) as box:
        database, appender, reader = box.database, box.appender, box.reader
        append_to_outbox(appender, [_record(1), _record(2), _record(3)])
        assert [r.delivery_id for _, r in await reader.read(0, 10)] == ["d-1", "d-2", "d-3"]
        assert await reader.count_waiting() == 3
        assert prune_round(box) == 0  # the evaluator moved nothing yet: everything stays

        async def move(*records: DeliveryRecord) -> None:
            async with database.transaction() as conn:
                rows = [delivery_row(r, EVALUATED, datetime.now(UTC)) for r in records]
                await DELIVERIES.insert(conn, rows)

        await move(_record(1), _record(2))
        assert await reader.count_waiting() == 1
        assert await reader.oldest_waiting() == _record(3).received_at
        assert prune_round(box) == 2
        left = await reader.read(0, 10)
        assert [r.delivery_id for _, r in left] == ["d-3"]
        await move(_record(3))
        assert prune_round(box) == 1
        assert await reader.read(0, 10) == [] and await reader.oldest_waiting() is None

        # a reader positioned after the last seq still sees what comes next (seq not reused)
        append_to_outbox(appender, [_record(4)])
        assert [(seq, r.delivery_id) for seq, r in await reader.read(left[-1][0], 10)] == [
            (4, "d-4")
        ]
        assert (await reader.find("wh-1", "d-4")) == _record(4)
        assert await reader.find("wh-1", "d-3") is None  # moved: the log answers for it


async def test_prune_goes_slice_by_slice_up_to_what_the_evaluator_moved(tmp_path: Path) -> None:
    async with store_with_outbox(tmp_path) as box:
        database, appender, reader = box.database, box.appender, box.reader
        records = [_record(i) for i in range(3 * outbox.PRUNE_SLICE)]
        append_to_outbox(appender, records)
        moved = records[: 2 * outbox.PRUNE_SLICE + 10]  # past the second slice's end
        async with database.transaction() as conn:
            now = datetime.now(UTC)
            await DELIVERIES.insert(conn, [delivery_row(r, EVALUATED, now) for r in moved])
        assert prune_round(box) == len(moved)
        left = [r.delivery_id for _, r in await reader.read(0, 10 * outbox.PRUNE_SLICE)]
        assert left == [r.delivery_id for r in records[len(moved) :]]
        assert await reader.count_waiting() == len(left)


async def test_large_bodies_mean_fewer_rows_per_read(tmp_path: Path) -> None:
    """The source reads `READ_BYTES` of bodies a pass, as the Redis streams do: before it has
    read any it assumes the largest, once it has seen bodies of 1 MB it asks for 4 rows at a
    time, and for its whole batch again once they are small."""
    body = b'{"pad": "' + b"x" * (1024 * 1024 - 11) + b'"}'

    def record(i: int, payload: bytes) -> DeliveryRecord:
        when = datetime(2026, 11, 24, 12, 0, 0, i, tzinfo=UTC)
        return DeliveryRecord(f"d-{i}", "wh-1", when, len(payload), Label.ACCEPTED, None, None,
                              payload)  # fmt: skip

    async with store_with_outbox(tmp_path) as box:
        source = OutboxSource(box.reader, batch=100, idle_wait=0.01)
        # none read yet: bodies of the largest size ingress takes are assumed
        assert source.count == source_module.READ_BYTES // MAX_BODY == 16
        assert source_module.READ_BYTES // len(body) == 4
        append_to_outbox(box.appender, [record(i, body) for i in range(10)])
        first = await source.read()  # how large they are is learned from this one
        assert len(first) == 10 and source.count == 4
        append_to_outbox(box.appender, [record(i, body) for i in range(10, 20)])
        assert [e.record.delivery_id for e in await source.read()] == [
            f"d-{i}" for i in range(10, 14)
        ]
        append_to_outbox(box.appender, [record(i, b"{}") for i in range(20, 150)])
        assert len(await source.read()) == 4  # 4 of the 6 bodies of 1 MB left
        assert len(await source.read()) == 4 and source.count == 4  # the last 2, 2 small ones
        assert len(await source.read()) == 4 and source.count == 100  # small ones only
        assert len(await source.read()) == 100


async def test_an_append_of_many_statements_is_one_transaction(tmp_path: Path) -> None:
    """A batch goes in as few multi-row INSERTs (outbox.ROWS_PER_INSERT rows each): all of them
    commit together, or none (here the last row repeats a delivery id: the unique index
    refuses it after two whole statements went in)."""
    async with store_with_outbox(tmp_path) as box:
        size = 2 * outbox.ROWS_PER_INSERT + 1
        batch = [_record(i) for i in range(size)]
        with pytest.raises(sqlite3.IntegrityError):
            append_to_outbox(box.appender, [*batch, _record(0)])
        assert await box.reader.read(0, 10 * size) == []
        append_to_outbox(box.appender, batch)
        append_to_outbox(box.appender, [_record(size)])  # one statement: its own transaction
        stored = await box.reader.read(0, 10 * size)
        assert [r.delivery_id for _, r in stored] == [f"d-{i}" for i in range(size + 1)]
        assert [r for _, r in stored] == [*batch, _record(size)]


def test_a_batch_moved_again_after_a_crash_starts_no_second_run(
    sqlite_store: Callable[..., str],
) -> None:
    settings = make_settings(sqlite_store(), evaluator="off")
    with GatewayClient.running(settings) as gwc:
        world = World.create(gwc)
        hook = add_webhook(gwc, world)
        automation = automation_for_everything(gwc, world, hook.uid)
        ids = [
            gwc.post(hook.path, content=b'{"n": %d}' % i, headers=hook.auth).json()["delivery_id"]
            for i in range(30)
        ]
        base = f"/factory/{world.factory_uid}/webhooks/{hook.uid}/deliveries"
        assert world.api("GET", f"{base}/{ids[0]}").json()["evaluation"] == "pending"

        async def evaluate(services: Services) -> int:
            """One evaluator from the oldest outbox row to the newest; runs it started."""
            assert isinstance(services.pending_deliveries, Outbox)
            source = OutboxSource(services.pending_deliveries, batch=7, idle_wait=0.01)
            consumer = Consumer(services.database, source, RunStarter(PLATFORM))
            while entries := await source.read():
                await consumer.process(entries)
            return consumer.runs_started

        assert gwc.run(evaluate) == 30
        # a restarted evaluator reads the rows not pruned yet again: none starts a run
        assert gwc.run(evaluate) == 0
        started = runs_of(gwc, ids)
        assert sorted((d, a) for d, a, _ in started) == sorted((d, automation) for d in ids)

        # in both places for a moment: the API lists each delivery once, as evaluated
        listed = world.api("GET", base, params={"limit": 100}).json()["deliveries"]
        assert sorted(i["delivery_id"] for i in listed) == sorted(ids)
        assert {i["evaluation"] for i in listed} == {"evaluated"}

        async def outbox_left(services: Services) -> int:
            assert isinstance(services.pending_deliveries, Outbox)
            return len(await services.pending_deliveries.read(0, 100))

        deadline = time.monotonic() + scaled(10)
        while gwc.run(outbox_left) and time.monotonic() < deadline:
            time.sleep(0.1)  # ingress prunes what the log holds every half second
        assert gwc.run(outbox_left) == 0

        async def logged(services: Services) -> int:
            d = t.deliveries
            query = select(func.count()).select_from(d).where(d.c.evaluation == EVALUATED)
            async with services.database.read() as conn:
                return int((await conn.execute(query)).scalar_one())

        assert gwc.run(logged) == 30
        detail = world.api("GET", f"{base}/{ids[0]}").json()
        assert detail["evaluation"] == "evaluated" and detail["payload"] == {"n": 0}


def test_the_evaluator_sees_the_outbox_file_of_the_store(tmp_path: Path) -> None:
    """The outbox is the store's file name plus a suffix, for every process of the deployment."""
    database = create_database(f"sqlite+aiosqlite:///{tmp_path}/gw.db")
    assert outbox.outbox_path(database) == f"{tmp_path}/gw.db{outbox.SUFFIX}"
    assert outbox.outbox_path(create_database("sqlite+aiosqlite:///:memory:")) is None
    asyncio.run(database.close())


def test_a_restart_remembers_deliveries_still_in_the_outbox(
    sqlite_store: Callable[..., str],
) -> None:
    """De-duplication and the backlog count come back from the outbox, not only from the log."""
    settings = make_settings(sqlite_store(), evaluator="off")
    sent = {"X-Service-Delivery-Id": "evt-1"}
    with GatewayClient.running(settings) as gwc:
        hook = add_webhook(gwc, World.create(gwc))
        first = gwc.post(hook.path, content=b'{"n": 1}', headers=hook.auth | sent)
        assert first.status_code == 202
    with GatewayClient.running(settings) as gwc:
        again = gwc.post(hook.path, content=b'{"n": 1}', headers=hook.auth | sent)
        assert again.status_code == 202
        assert again.json()["delivery_id"] == first.json()["delivery_id"]

        async def backlog(services: Services) -> int:
            assert isinstance(services.ingress, Ingress)
            assert isinstance(services.ingress.backend, MemoryBackend)
            return services.ingress.backend.backlog

        assert gwc.run(backlog) == 1


def test_requests_meeting_a_backlog_recount_wait_for_it_instead_of_being_refused(
    sqlite_store: Callable[..., str],
) -> None:
    """The in-memory count reached the limit, but an evaluator in another process has drained
    the outbox: every request that arrives while the one SQL recount runs is accepted."""
    settings = make_settings(sqlite_store(), evaluator="off", max_backlog="100")
    with GatewayClient.running(settings) as gwc:
        hook = add_webhook(gwc, World.create(gwc))

        async def burst_at_a_stale_limit(services: Services) -> list[str]:
            assert isinstance(services.ingress, Ingress)
            backend = services.ingress.backend
            assert isinstance(backend, MemoryBackend)
            backend.backlog = backend.max_backlog  # as counted before the evaluator drained it
            target = Target(hook.uid, 1, shard_of(hook.uid))
            copies = [
                Submission(target, f"dlv_burst{i}", f"evt-{i}", b"{}", True) for i in range(20)
            ]
            outcomes = await asyncio.gather(*(backend.submit(s) for s in copies))
            return [outcome.verdict.name for outcome in outcomes]

        assert gwc.run(burst_at_a_stale_limit) == ["ACCEPTED"] * 20


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_duplicates_older_than_the_memory_are_found_in_the_store(
    own_store: Callable[[str], str], store: str
) -> None:
    """Past GATEWAY_DEDUP_MEMORY entries, de-duplication goes on through the per-day filters
    and the store: the outbox beside a SQLite file, the delivery log on PostgreSQL."""
    with gateway_with_least_memory(own_store(store)) as gwc:
        first = gwc.run(lambda services: send_numbered(services, range(MIN_EXACT + 1000)))
        assert {verdict for verdict, _ in first} == {"ACCEPTED"}
        # the oldest left memory: sent again (ten per webhook: its limit leaves room for
        # that), each is found in the store, with its first id
        oldest = [n for n in range(1000) if n % 50 < 10]
        again = gwc.run(lambda services: send_numbered(services, oldest))
        assert again == [("DUPLICATE", first[n][1]) for n in oldest]


def test_openers_racing_on_a_new_outbox_all_get_wal(tmp_path: Path) -> None:
    # two workers starting together: both read the new file (a shared lock) and both ask for WAL;
    # SQLite refuses one of the two upgrades at once, without waiting (it failed ~1 race in 40)
    failures: list[Exception] = []
    for attempt in range(150):
        path = str(tmp_path / f"store-{attempt}.db-outbox")
        start = threading.Barrier(3)

        def open_outbox(path: str = path, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                create_schema(path)
            except sqlite3.OperationalError as error:
                failures.append(error)

        openers = [threading.Thread(target=open_outbox) for _ in range(3)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert failures == []


def test_an_outbox_made_with_the_earlier_index_is_opened_with_the_delivery_index(
    tmp_path: Path,
) -> None:
    # before 2026-12-03 the outbox was indexed by (webhook_uid, delivery_id); each append then
    # landed on a page of its own. Opened now, a file of then keeps its rows and loses that index
    path = str(tmp_path / "store.db-outbox")
    with sqlite3.connect(path) as then:
        then.execute(outbox.SCHEMA[0])
        then.execute("CREATE UNIQUE INDEX outbox_webhook ON outbox (webhook_uid, delivery_id)")
        then.execute(outbox._insert_statement(1), outbox.row_of(_record(1)))
    appender = outbox.OutboxAppender(path)
    appender.append([outbox.row_of(_record(2))])
    appender.close()
    with sqlite3.connect(path) as now:
        indexes = {row[1] for row in now.execute("PRAGMA index_list(outbox)")}
        plan = now.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM outbox WHERE delivery_id = ? AND webhook_uid = ?",
            ("d-1", "wh-1"),
        ).fetchall()
        kept = [row[0] for row in now.execute("SELECT delivery_id FROM outbox ORDER BY seq")]
    assert "outbox_delivery" in indexes and "outbox_webhook" not in indexes
    assert "outbox_delivery" in str(plan)
    assert kept == ["d-1", "d-2"]


def test_a_delivery_id_is_appended_once(tmp_path: Path) -> None:
    appender = outbox.OutboxAppender(str(tmp_path / "store.db-outbox"))
    appender.append([outbox.row_of(_record(1))])
    with pytest.raises(sqlite3.IntegrityError):
        appender.append([outbox.row_of(_record(1))])
    appender.close()
