"""The dispatcher: retries with backoff and Retry-After, gives up, leases, keeps one slow
destination from delaying another, and is woken by an enqueue. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from sqlalchemy import select

from gateway.foundation.metrics.counts import COUNTS
from gateway.foundation.outbound import (
    Delivered,
    Dispatcher,
    Failed,
    OutboundMessage,
    Outcome,
    RetryLater,
    RetrySchedule,
    enqueue,
    queue,
)
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from tests.outbound.senders import ScriptedSender

m, a = t.outbound_messages, t.outbound_attempts


async def put(database: Database, kind: str, n: int = 1, destination: str = "d") -> list[str]:
    made = []
    async with database.transaction() as conn:
        for i in range(n):
            uid = await enqueue(
                conn, kind=kind, key=f"{kind}:{destination}:{i}", destination=destination,
                payload={"i": i},
            )  # fmt: skip
            assert uid is not None
            made.append(uid)
    return made


async def message(database: Database, uid: str):
    async with database.read() as conn:
        return (await conn.execute(select(m).where(m.c.id == uid))).one()


async def attempts(database: Database, uid: str) -> list:
    async with database.read() as conn:
        query = select(a).where(a.c.message_id == uid).order_by(a.c.n)
        return list((await conn.execute(query)).all())


async def test_a_5xx_is_retried_with_backoff_then_delivered(database: Database, kind: str) -> None:
    sender = ScriptedSender(kind, [RetryLater(error="503 Service Unavailable", status=503)] * 2)
    [uid] = await put(database, kind)
    before = COUNTS.outbound_attempts[(kind, "retry")]
    await Dispatcher(database, {kind: sender}).drain()
    row = await message(database, uid)
    assert (row.state, row.attempts, row.last_error) == ("delivered", 3, None)
    assert row.result == {"message_id": f"m-{uid}", "url": f"https://example.com/{uid}"}
    tries = await attempts(database, uid)
    assert [(x.n, x.status) for x in tries] == [(1, 503), (2, 503), (3, None)]
    assert tries[0].error == "503 Service Unavailable"
    gaps = [b - a_ for (_, a_), (_, b) in zip(sender.sent, sender.sent[1:], strict=False)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1  # first_s, then doubled
    assert sender.settlements == [(uid, Delivered(message_id=f"m-{uid}", url=row.result["url"]))]
    assert COUNTS.outbound_attempts[(kind, "retry")] == before + 2
    assert COUNTS.outbound_messages[(kind, "delivered")] >= 1


async def test_retry_after_is_honoured(database: Database, kind: str) -> None:
    sender = ScriptedSender(kind, [RetryLater(error="429 Too Many Requests", after=0.6)])
    [uid] = await put(database, kind)
    await Dispatcher(database, {kind: sender}, poll_s=0.05).drain()
    assert (await message(database, uid)).state == "delivered"
    (_, first), (_, second) = sender.sent
    assert second - first >= 0.6


async def test_an_exhausted_schedule_fails_the_message(database: Database, kind: str) -> None:
    sender = ScriptedSender(kind, [RetryLater(error="502 Bad Gateway", status=502)] * 10)
    [uid] = await put(database, kind)
    await Dispatcher(database, {kind: sender}).drain()
    row = await message(database, uid)
    assert (row.state, row.attempts) == ("failed", 4)
    assert row.last_error == "502 Bad Gateway"
    [(settled_id, outcome)] = sender.settlements
    assert settled_id == uid and isinstance(outcome, Failed)
    assert outcome.error == "502 Bad Gateway (gave up after 4 attempts)"


async def test_an_age_limit_fails_the_message(database: Database, kind: str) -> None:
    old = RetrySchedule(first_s=5.0, max_age_s=1.0, jitter=0.0)
    sender = ScriptedSender(kind, [RetryLater(error="timeout")], schedule=old)
    [uid] = await put(database, kind)
    await Dispatcher(database, {kind: sender}).drain()
    assert ((await message(database, uid)).state, len(sender.sent)) == ("failed", 1)


async def test_failed_is_final_at_once(database: Database, kind: str) -> None:
    refused = Failed(error="401 Unauthorized: Bad credentials", status=401)
    sender = ScriptedSender(kind, [refused])
    [uid] = await put(database, kind)
    await Dispatcher(database, {kind: sender}).drain()
    row = await message(database, uid)
    assert (row.state, row.attempts, row.last_status) == ("failed", 1, 401)
    assert sender.settlements == [(uid, refused)]


async def test_a_leased_message_waits_for_its_lease(database: Database, kind: str) -> None:
    """A dispatcher that claimed a message and died: nobody sends it until its lease lapses,
    then another does, once."""
    [uid] = await put(database, kind)
    async with database.transaction() as conn:
        [claimed] = await queue.claim(conn, [kind], timedelta(seconds=0.5), 10, lambda *_: True)
    assert claimed.id == uid
    sender = ScriptedSender(kind)
    other = Dispatcher(database, {kind: sender})
    assert await other.pump() == 0
    await asyncio.sleep(0.6)
    await other.drain()
    assert [sent for sent, _ in sender.sent] == [uid]


async def test_two_dispatchers_send_each_message_once(database: Database, kind: str) -> None:
    made = await put(database, kind, 30)
    sender = ScriptedSender(kind, delay=lambda _: 0.01)
    one, two = (Dispatcher(database, {kind: sender}, per_destination=8) for _ in range(2))
    await asyncio.gather(one.drain(), two.drain())
    assert sorted(sent for sent, _ in sender.sent) == sorted(made)


@pytest.mark.parametrize("limit_of", ["dispatcher", "sender"])
async def test_a_slow_destination_does_not_delay_another(
    database: Database, kind: str, limit_of: str
) -> None:
    """The slow destination's calls hang until the fast one's messages are all delivered: they
    are, and the slow one has no more than its two calls in flight meanwhile, the limit being
    the dispatcher's or the sender's own (`per_destination`, as the event sender has)."""
    release = asyncio.Event()

    class Gated(ScriptedSender):
        if limit_of == "sender":
            per_destination = 2

        async def send(self, message: OutboundMessage) -> Outcome:
            if message.destination == "slow":
                self.sent.append((message.id, time.monotonic()))
                await release.wait()
                return Delivered(message_id="slow")
            return await super().send(message)

    sender = Gated(kind)
    slow = await put(database, kind, 6, destination="slow")
    fast = await put(database, kind, 3, destination="fast")
    limit = 2 if limit_of == "dispatcher" else 1  # the sender's 2 then prevails
    dispatcher = Dispatcher(database, {kind: sender}, per_destination=limit, timeout_s=60.0)
    running = asyncio.create_task(dispatcher.run())
    try:
        deadline = time.monotonic() + 30
        for uid in fast:
            while (await message(database, uid)).state != "delivered":
                assert time.monotonic() < deadline, "a fast message waited for the slow ones"
                await asyncio.sleep(0.02)
        assert len([uid for uid, _ in sender.sent if uid in slow]) == 2  # two per destination
        assert (await message(database, slow[0])).state == "pending"
        release.set()
        for uid in slow:
            while (await message(database, uid)).state != "delivered":
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
    finally:
        release.set()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)  # ended while the store is open


async def test_a_send_past_its_timeout_is_retried(database: Database, kind: str) -> None:
    sender = ScriptedSender(kind, delay=lambda msg: 2.0 if len(sender.sent) == 1 else 0.0)
    [uid] = await put(database, kind)
    await Dispatcher(database, {kind: sender}, timeout_s=0.2).drain()
    row = await message(database, uid)
    assert (row.state, row.attempts) == ("delivered", 2)
    first = (await attempts(database, uid))[0]
    assert first.error == "no answer within 0.2 s"


async def test_an_enqueue_wakes_the_dispatcher(database: Database, kind: str) -> None:
    sender = ScriptedSender(kind)
    dispatcher = Dispatcher(database, {kind: sender}, poll_s=60.0)
    running = asyncio.create_task(dispatcher.run())
    try:
        await asyncio.sleep(0.2)  # its first look found nothing; the next is a minute away
        [uid] = await put(database, kind)
        deadline = time.monotonic() + 5
        while (await message(database, uid)).state != "delivered":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_a_cancelled_dispatcher_stops_whatever_its_pump_raised(
    database: Database, kind: str
) -> None:
    """A cancellation that a claim turns into an error on its way out (a store whose connection
    the cancellation broke) still stops the dispatcher: it does not log it and poll on."""

    class Broken(Dispatcher):
        broke = False

        async def pump(self) -> int:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if self.broke:  # once: a dispatcher that swallows it still ends the test
                    raise
                self.broke = True
                raise RuntimeError("the connection broke as the claim was cancelled") from None
            return 0

    running = asyncio.create_task(Broken(database, {kind: ScriptedSender(kind)}).run())
    await asyncio.sleep(0.1)
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=3)
    if not done:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert done and running.cancelled(), "the cancelled dispatcher polled on"
