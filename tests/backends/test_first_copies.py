"""The look-ups behind the de-duplication memory's MAYBE: batched, on the outbox writer's own
connections beside a SQLite file, the log first and the outbox only when it may hold the key;
and under a flood of them (the day filters full) ingress neither stalls nor opens connections."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.dialects import sqlite

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.backends.delivery_rows import DELIVERIES, EVALUATED, delivery_row
from gateway.foundation.backends.first_copies import MAX_BATCH, FirstCopies, Wanted
from gateway.foundation.backends.identity_index import ensure_identity_index
from gateway.foundation.backends.seen_deliveries import (
    MIN_EXACT,
    DayFilter,
    SeenDeliveries,
    seen_key,
)
from gateway.foundation.store import create_database, migrate
from gateway.kernel import ids
from gateway.webhook_gateway.transports.embedded.writer import DeliveryWriter
from tests.backends.outbox_support import (
    append_to_outbox,
    gateway_with_least_memory,
    send_numbered,
    store_with_outbox,
)
from tests.conftest import make_settings

T0 = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
_TIME = DELIVERIES.encoder(sqlite.dialect(), "received_at")


def _record(n: int, identity: str, seconds: float) -> DeliveryRecord:
    when = T0 + timedelta(seconds=seconds)
    return DeliveryRecord(f"d-{n}", "wh-1", when, 2, Label.ACCEPTED, identity, None, b"{}")


def _times(since: float, outbox_until: float) -> tuple[str, str]:
    return _TIME(T0 + timedelta(seconds=since)), _TIME(T0 + timedelta(seconds=outbox_until))


async def test_the_log_answers_first_then_the_outbox_when_it_may_hold_the_key(
    tmp_path: Path,
) -> None:
    async with store_with_outbox(tmp_path) as box:
        database, appender, lookups = box.database, box.appender, box.lookups
        async with database.transaction() as conn:  # moved into the log by the evaluator
            rows = [delivery_row(_record(1, "moved", 10), EVALUATED, T0)]
            rows.append(delivery_row(_record(2, "moved", 20), EVALUATED, T0))  # a second copy
            await DELIVERIES.insert(conn, rows)
        append_to_outbox(appender, [_record(3, "waiting", 30), _record(4, "waiting", 40)])

        def first(identity: str, since: float, outbox_until: float) -> str | None:
            (found,) = lookups.first_copies([("wh-1", identity, *_times(since, outbox_until))])
            return found

        assert first("moved", 0, 0) == "d-1"  # the oldest copy in the window
        assert first("moved", 15, 0) == "d-2"  # the first one is past the window
        assert first("moved", 25, 0) is None
        # still in the outbox: found while its oldest row may hold keys memory let go...
        assert first("waiting", 0, 30) == "d-3"
        assert first("waiting", 35, 40) == "d-4"
        assert first("never", 0, 40) is None
        # ...not once every row there is newer than any key memory let go
        assert first("waiting", 0, 29) is None
        # one call, several answers in order, the outbox read once for all of them
        assert lookups.first_copies([
            ("wh-1", "waiting", *_times(0, 30)),
            ("wh-1", "moved", *_times(0, 30)),
            ("wh-2", "waiting", *_times(0, 30)),
        ]) == ["d-3", "d-1", None]  # fmt: skip


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_writer_finds_each_first_copy_in_the_log_in_one_call(
    own_store: Callable[[str], str], store: str
) -> None:
    """On a SQLite file on the outbox writer's thread; on PostgreSQL in one query."""

    async def check(url: str) -> None:
        database = create_database(make_settings(url).database_url)
        await migrate(database)
        await ensure_identity_index(database)  # as the embedded backend does when it starts
        writer = DeliveryWriter(database)
        try:
            async with database.transaction() as conn:
                records = [_record(1, "moved", 10), _record(2, "moved", 20), _record(3, "b", 30)]
                await DELIVERIES.insert(conn, [delivery_row(r, EVALUATED, T0) for r in records])

            def wanted(identity: str, since: float, webhook: str = "wh-1") -> Wanted:
                return Wanted(webhook, identity, T0 + timedelta(seconds=since), T0)

            assert await writer.first_copies([
                wanted("moved", 0), wanted("moved", 15), wanted("moved", 25), wanted("b", 25),
                wanted("never", 0), wanted("b", 0, webhook="wh-2"),
            ]) == ["d-1", "d-2", None, "d-3", None, None]  # fmt: skip
        finally:
            await writer.close()
            await database.close()

    asyncio.run(check(own_store(store)))


async def test_lookups_arriving_together_form_one_batch_and_share_its_failure() -> None:
    calls: list[int] = []
    fail = False

    async def find_many(wanted: Sequence[Wanted]) -> list[str | None]:
        calls.append(len(wanted))
        await asyncio.sleep(0.01)
        if fail:
            raise OSError("disk I/O error")
        return [f"first-{w.identity}" if w.identity.startswith("seen") else None for w in wanted]

    copies = FirstCopies(find_many)

    def wanted(identity: str) -> Wanted:
        return Wanted("wh-1", identity, T0, T0)

    found = await asyncio.gather(*(copies.find(wanted(f"{k}-{i}")) for i in range(600)
                                   for k in ("seen", "new")))  # fmt: skip
    assert found == [f"first-seen-{i}" if k == "seen" else None for i in range(600)
                     for k in ("seen", "new")]  # fmt: skip
    # the first caller's look-up ran alone, the others queued meanwhile: in batches of MAX_BATCH
    assert calls == [MAX_BATCH, MAX_BATCH, 200] and sum(calls) == 1200

    fail = True
    outcomes = await asyncio.gather(*(copies.find(wanted("x")) for _ in range(3)),
                                    return_exceptions=True)  # fmt: skip
    assert [type(o) for o in outcomes] == [OSError] * 3
    # a waiter that went away does not keep the others from their answers
    fail = False
    gone = asyncio.ensure_future(copies.find(wanted("seen-gone")))
    kept = asyncio.ensure_future(copies.find(wanted("seen-kept")))
    await asyncio.sleep(0)
    gone.cancel()
    assert await kept == "first-seen-kept"
    await copies.close()


def test_memory_tells_how_recent_the_keys_it_let_go_were() -> None:
    seen = SeenDeliveries(7 * 86_400_000, MIN_EXACT)
    base = 1_700_000_000_000
    delivery_ids = [f"dlv_{base + i:012x}{i:020x}" for i in range(MIN_EXACT + 10)]
    for i, delivery_id in enumerate(delivery_ids):
        seen.remember(seen_key("wh", f"evt-{i}"), delivery_id, base + i)
    assert seen.forgotten_until_ms == ids.millis_of(delivery_ids[9]) == base + 9


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_flood_of_lookups_neither_stalls_ingress_nor_opens_connections(
    own_store: Callable[[str], str], store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Day filters that answer MAYBE for every key (as once a busy day has filled them): each
    new delivery is looked up, and its copies sent again are still found."""
    monkeypatch.setattr(DayFilter, "may_hold", lambda self, key: True)
    with gateway_with_least_memory(own_store(store)) as gwc:
        first = gwc.run(lambda services: send_numbered(services, range(MIN_EXACT)))
        threads = threading.active_count()
        # memory is full: from here on every new key is a MAYBE, looked up in the store
        rest = gwc.run(lambda services: send_numbered(services, range(MIN_EXACT, MIN_EXACT + 6000)))
        assert {verdict for verdict, _ in first + rest} == {"ACCEPTED"}
        assert threading.active_count() <= threads + 1  # no connection (thread) per look-up
        # the first of each webhook's again (its limit leaves room for ten more)
        again = gwc.run(lambda services: send_numbered(services, range(0, MIN_EXACT, 50)))
        assert again == [("DUPLICATE", delivery_id) for _, delivery_id in first[::50]]
        # a burst of new keys at one webhook: its limit holds across the look-ups' awaits
        burst = gwc.run(lambda services: send_numbered(services, range(-100, 0), "whk_burst"))
        verdicts = [verdict for verdict, _ in burst]
        assert verdicts == ["ACCEPTED"] * 60 + ["RATE_LIMITED"] * 40
