"""The outbound dispatcher: a background loop that sends the queue's due messages through the
sender of their kind, and settles each attempt.

It claims due messages with a lease (SKIP LOCKED on PostgreSQL: any number of dispatchers may
run), sends them concurrently, at most `max_in_flight` at once and `per_destination` to one
destination, each with a timeout, so one slow destination never delays another. Every attempt
is recorded (outbound_attempts); Delivered settles the message delivered, RetryLater schedules
the next attempt by the kind's RetrySchedule (honouring the wait the other side asked for),
Failed or an exhausted schedule settles it failed. The sender's `settled` runs in the
transaction that settles a message for good, so a kind reacts to it with the message's state.

A message whose sender was cut off mid-call (a crash, a kill) is sent again once its lease runs
out: at least once, not exactly once. What a kind cannot send twice it keys (`enqueue`'s `key`)
and makes safe to repeat on its side where it can.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.metrics.counts import COUNTS
from gateway.foundation.outbound import queue
from gateway.foundation.outbound.backoff import RetrySchedule
from gateway.foundation.outbound.outcomes import Delivered, Failed, Outcome, RetryLater
from gateway.foundation.outbound.queue import OutboundMessage, Settlement, State
from gateway.foundation.store import Database
from gateway.foundation.store.types import utcnow
from gateway.kernel.event_waits import wait_event

log = logging.getLogger("gateway.outbound")

POLL_S = 1.0
TIMEOUT_S = 30.0
MAX_IN_FLIGHT = 128
PER_DESTINATION = 4
# an attempt to settle: its settlement, final outcome, the outcome, and who waits for it
_ToSettle = tuple[Settlement, "Outcome | None", Outcome, "asyncio.Future[None]"]


class Sender(Protocol):
    """What sends one kind of message. A sender may also say how many of its messages go to
    one destination at once (`per_destination`, an int attribute); else the dispatcher's."""

    kind: str
    schedule: RetrySchedule

    async def send(self, message: OutboundMessage) -> Outcome:
        """One attempt; never raises for what the other side or the network did."""
        ...

    async def settled(
        self, conn: AsyncConnection, message: OutboundMessage, outcome: Outcome
    ) -> None:
        """The message is settled for good (Delivered or Failed), in the same transaction."""
        ...


class Dispatcher:
    def __init__(
        self,
        database: Database,
        senders: Mapping[str, Sender],
        *,
        poll_s: float = POLL_S,
        timeout_s: float = TIMEOUT_S,
        max_in_flight: int = MAX_IN_FLIGHT,
        per_destination: int = PER_DESTINATION,
    ) -> None:
        self._database, self._senders = database, dict(senders)
        self._poll_s, self._timeout_s = poll_s, timeout_s
        self._max_in_flight, self._per_destination = max_in_flight, per_destination
        self._limits: dict[str, int] = {
            kind: min(limit, max_in_flight)
            for kind, sender in self._senders.items()
            if (limit := getattr(sender, "per_destination", None)) is not None
        }
        # a lease outlasts the call's timeout and the settling after it (a dispatcher that died
        # mid-call leaves the message to others once it ran out)
        self._lease = timedelta(seconds=timeout_s + max(5.0, timeout_s))
        self._wakeup = asyncio.Event()
        self._in_flight: defaultdict[str, int] = defaultdict(int)
        self._tasks: set[asyncio.Task[None]] = set()
        self._to_settle: list[_ToSettle] = []
        self._settler: asyncio.Task[None] | None = None
        queue.listen(self)

    def wake(self) -> None:
        """Look for due messages now (a message was enqueued, or a send ended)."""
        self._wakeup.set()

    async def run(self) -> None:
        """Until cancelled; a send in flight then is cancelled, and tried again after its lease."""
        try:
            while True:
                try:
                    await self.pump()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the store may be back in a moment
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():  # an error raised on its way
                        raise asyncio.CancelledError from exc  # out: cancelled all the same
                    log.warning("outbound dispatcher: %s", exc, exc_info=True)
                await wait_event(self._wakeup, self._poll_s)
                self._wakeup.clear()
        finally:
            for task in list(self._tasks):
                task.cancel()
            if self._settler is not None:
                self._settler.cancel()

    async def pump(self) -> int:
        """Claims what is due, as far as the limits allow, and starts sending it; how many."""
        room = self._max_in_flight - len(self._tasks)
        if room <= 0 or not self._senders:
            return 0
        taken: defaultdict[str, int] = defaultdict(int)

        def admit(kind: str, destination: str) -> bool:
            limit = self._limits.get(kind, self._per_destination)
            if self._in_flight[destination] + taken[destination] >= limit:
                return False
            taken[destination] += 1
            return True

        async with self._database.transaction() as conn:
            claimed = await queue.claim(conn, self._senders, self._lease, room, admit)
        for message in claimed:
            self._in_flight[message.destination] += 1
            task = asyncio.create_task(self._deliver(message), name=f"outbound-{message.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return len(claimed)

    async def drain(self, within_s: float = 30.0) -> None:
        """Sends until no message of its kinds waits (held ones aside) and none is in flight,
        retries included (tests, a CLI)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            await self.pump()
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - time.monotonic()))
                continue
            async with self._database.read() as conn:
                if not await queue.waiting(conn, self._senders):
                    return
            await asyncio.sleep(min(self._poll_s, 0.05))
        raise TimeoutError("outbound messages still waiting")

    async def _deliver(self, message: OutboundMessage) -> None:
        try:
            started = time.monotonic()
            outcome = await self._attempt(message)
            latency_ms = int((time.monotonic() - started) * 1000)
            await self._settle(message, outcome, latency_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # not settled: sent again once the lease runs out
            log.warning("outbound message %s: %s", message.id, exc, exc_info=True)
        finally:
            self._in_flight[message.destination] -= 1
            if not self._in_flight[message.destination]:
                del self._in_flight[message.destination]
            self.wake()

    async def _attempt(self, message: OutboundMessage) -> Outcome:
        sender = self._senders[message.kind]
        try:
            async with asyncio.timeout(self._timeout_s):  # no task of its own, as wait_for makes
                return await sender.send(message)
        except TimeoutError:
            return RetryLater(error=f"no answer within {self._timeout_s:g} s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a sender's bug must not stop its kind: logged, tried again
            log.exception("outbound %s sender failed on message %s", message.kind, message.id)
            return RetryLater(error=f"{type(exc).__name__}: {exc}")

    def _settlement(
        self, message: OutboundMessage, outcome: Outcome, latency_ms: int
    ) -> tuple[Settlement, Outcome | None]:
        """What the attempt comes to on the message, and the final outcome when it settles the
        message for good (None while it is tried again)."""
        sender = self._senders[message.kind]
        now = utcnow()
        attempts = message.attempts + 1
        final: Outcome | None = outcome
        next_at = None
        result: dict[str, Any] | None = None
        state: State
        if isinstance(outcome, Delivered):
            state, error, status = "delivered", None, None
            result = {"message_id": outcome.message_id, "url": outcome.url}
        elif isinstance(outcome, RetryLater):
            state, error, status = "pending", outcome.error, outcome.status
            next_at = sender.schedule.next_attempt(attempts, message.created_at, now, outcome.after)
            if next_at is None:
                state = "failed"
                final = Failed(
                    error=f"{outcome.error} (gave up after {attempts} attempts)",
                    status=outcome.status,
                )
            else:
                final = None
        else:
            state, error, status = "failed", outcome.error, outcome.status
        settlement = Settlement(
            message=message, state=state, at=now, latency_ms=latency_ms,
            next_attempt_at=next_at, error=error, status=status, result=result,
        )  # fmt: skip
        return settlement, final

    async def _settle(self, message: OutboundMessage, outcome: Outcome, latency_ms: int) -> None:
        """Waits until the attempt is settled: with the others that ended meanwhile, in one
        transaction (group commit), so a message costs a share of a transaction, not one."""
        settlement, final = self._settlement(message, outcome, latency_ms)
        done = asyncio.get_running_loop().create_future()
        self._to_settle.append((settlement, final, outcome, done))
        if self._settler is None:
            self._settler = asyncio.create_task(self._settle_batches(), name="outbound-settle")
        await done

    async def _settle_batches(self) -> None:
        try:
            while self._to_settle:
                batch, self._to_settle = self._to_settle, []
                try:
                    await self._settle_batch(batch)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # one message's `settled` failing must not hold back the others: each
                    # alone, and those that fail again are sent again after their lease
                    for item in batch:
                        try:
                            await self._settle_batch([item])
                        except asyncio.CancelledError:
                            raise
                        except Exception as exc:
                            if not item[3].done():
                                item[3].set_exception(exc)
                for *_, done in batch:
                    if not done.done():
                        done.set_result(None)
        finally:
            self._settler = None
            for *_, done in self._to_settle:
                done.cancel()
            self._to_settle = []

    async def _settle_batch(self, batch: list[_ToSettle]) -> None:
        finals = {settlement.message.id: final for settlement, final, _, _ in batch}
        async with self._database.transaction() as conn:
            applied = await queue.settle_many(conn, [item[0] for item in batch])
            for settlement in applied:
                final = finals[settlement.message.id]
                if final is not None:
                    sender = self._senders[settlement.message.kind]
                    await sender.settled(conn, settlement.message, final)
        outcomes = {settlement.message.id: outcome for settlement, _, outcome, _ in batch}
        for settlement in applied:
            message, state = settlement.message, settlement.state
            COUNTS.outbound_attempts[(message.kind, _result(outcomes[message.id]))] += 1
            if finals[message.id] is not None:
                COUNTS.outbound_messages[(message.kind, state)] += 1
            if state == "failed":
                log.warning(
                    "outbound %s message %s failed: %s", message.kind, message.id, settlement.error
                )


def _result(outcome: Outcome) -> str:
    if isinstance(outcome, Delivered):
        return "delivered"
    return "retry" if isinstance(outcome, RetryLater) else "failed"
