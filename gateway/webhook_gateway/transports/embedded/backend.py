"""Embedded backend (no Redis, one process): limits and de-duplication in memory, accepted
deliveries written durably before the 202 (`DeliveryWriter`: into the outbox file beside a SQLite
store, else into the delivery log as pending), the evaluator's queue. Checks and reservations happen
without an await in between, so they are atomic on the event loop; the reservation is undone
when the log commit fails.

The backlog (accepted deliveries not evaluated yet) is counted here: up on each accepted
delivery, down when the evaluator reports what it claimed. An evaluator in another process
reports nothing, so a full backlog is counted again in SQL (at most every RECOUNT_S) before a
delivery is refused."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from gateway.foundation.backends.contract import (
    DEDUP_WINDOW_S,
    RATE_LIMIT,
    RATE_WINDOW_MS,
    REJECT_LOG_LIMIT,
    DeliveryRecord,
    Label,
    Outcome,
    Submission,
    Target,
    Verdict,
)
from gateway.foundation.backends.delivery_rows import PENDING
from gateway.foundation.backends.first_copies import FirstCopies, Wanted
from gateway.foundation.backends.identity_index import ensure_identity_index
from gateway.foundation.backends.refusal_tally import RefusalTally
from gateway.foundation.backends.seen_deliveries import MAYBE, SeenDeliveries, seen_key
from gateway.foundation.backends.sliding_window import SlidingWindow
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.kernel.errors import Unavailable
from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.transports.embedded.writer import DeliveryWriter
from gateway.webhook_gateway.transports.outbox.file import Outbox

RECOUNT_S = 0.5
# a delivery's id is made a moment before its receipt time is taken (the same request, nothing
# awaited between): the outbox rows that may hold a key memory let go were received by then
ID_TO_RECEIPT_SLACK_MS = 1000
# the first copy of a delivery: its id, and its commit while that is under way
First = tuple[str, asyncio.Future[None] | None]


class MemoryBackend:
    def __init__(
        self,
        database: Database,
        log: DeliveryWriter,
        auth_failure_limit: int,
        max_backlog: int,
        outbox: Outbox | None = None,
        dedup_memory: int = 65_536,
    ) -> None:
        self.database = database
        self.outbox = outbox  # where accepted deliveries wait, when not in the log itself
        self.log = log
        self.auth_failure_limit = auth_failure_limit
        self.max_backlog = max_backlog
        self._auth = SlidingWindow(RATE_WINDOW_MS)
        self._rate = SlidingWindow(RATE_WINDOW_MS)
        self._rejects = SlidingWindow(RATE_WINDOW_MS)
        self.unlogged = RefusalTally()  # refusals past the reject-log cap, or backlog full
        self._seen = SeenDeliveries(DEDUP_WINDOW_S * 1000, dedup_memory)
        self._first_copies = FirstCopies(log.first_copies)
        # first copies still committing: a copy arriving meanwhile shares their fate
        self._committing_firsts: dict[bytes, First] = {}
        self.backlog = 0  # accepted (committed or committing), not evaluated yet
        self._committing = 0
        self._recounted = 0.0
        self._recount: asyncio.Future[None] | None = None

    def prepare(self, targets: Iterable[Target]) -> None:
        return None  # nothing per webhook until its first delivery

    async def preload(self) -> None:
        """Restore the 7-day de-duplication memory and the backlog from the log after a
        restart (and make the log's index its look-ups past that memory read)."""
        await ensure_identity_index(self.database)
        since = datetime.now(UTC) - timedelta(seconds=DEDUP_WINDOW_S)
        d = t.deliveries
        query = (
            select(d.c.webhook_uid, d.c.identity, d.c.delivery_id, d.c.received_at)
            .where(d.c.label == Label.ACCEPTED.value, d.c.received_at >= since)
            .order_by(d.c.received_at)  # the newest stay in memory, the others in its filters
        )
        async with self.database.read() as conn:
            for row in await conn.execute(query):
                self._remember(row.webhook_uid, row.identity, row.delivery_id, row.received_at)
        if self.outbox is not None:  # accepted, not moved into the log yet
            for r in await self.outbox.accepted():
                self._remember(r.webhook_uid, r.identity, r.delivery_id, r.received_at)
        self.backlog = await self._count_pending()

    def _remember(
        self, webhook_uid: str, identity: str | None, delivery_id: str, received: datetime
    ) -> None:
        if identity is not None:
            key = seen_key(webhook_uid, identity)
            self._seen.remember(key, delivery_id, received.timestamp() * 1000)

    def evaluated(self, count: int) -> None:
        """The evaluator (in this process) claimed `count` pending deliveries."""
        self.backlog = max(0, self.backlog - count)

    async def _count_pending(self) -> int:
        if self.outbox is not None:
            return await self.outbox.count_waiting()
        d = t.deliveries
        query = select(func.count()).select_from(d).where(d.c.evaluation == PENDING)
        async with self.database.read() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def _backlog_full(self) -> bool:
        if self.backlog < self.max_backlog:
            return False
        if self._recount is None:
            if time.monotonic() - self._recounted < RECOUNT_S:
                return True  # counted a moment ago, and full
            self._recount = asyncio.ensure_future(self._count_again())
        # every request that finds the count at the limit waits for the one recount under way
        # (answering 503 meanwhile refused deliveries for as long as the count took)
        await asyncio.shield(self._recount)
        return self.backlog >= self.max_backlog

    async def _count_again(self) -> None:
        """An evaluator elsewhere may have drained the backlog: count it in SQL (rows still
        committing are not there yet)."""
        try:
            committing = self._committing
            self.backlog = await self._count_pending() + committing
        finally:
            self._recounted = time.monotonic()
            self._recount = None

    async def submit(self, s: Submission) -> Outcome:
        now = time.time() * 1000
        uid = s.target.webhook_uid
        if (limited := self._over_rate(s, now)) is not None:
            return limited
        if not s.valid_json:
            self._rate.add(uid, now)
            self._log(s.target, s.delivery_id, len(s.body), _INVALID_JSON, now)
            return Outcome(Verdict.INVALID_JSON)
        key = seen_key(uid, s.identity)
        first = self._first(key, now)
        if isinstance(first, str):  # MAYBE: seen before what memory holds exactly; ask the store
            first = await self._first_in_store(key, s, now)
            # meanwhile other requests may have taken the window's last slots
            if (limited := self._over_rate(s, now)) is not None:
                return limited
        if first is not None:
            self._rate.add(uid, now)
            return await self._duplicate(s, first, now)
        if self.backlog >= self.max_backlog:
            if await self._backlog_full():
                # nothing recorded, no rate slot taken; counted for `delivery.rejected`
                self.unlogged.add(uid, Reason.BACKLOG_FULL.value, now)
                return Outcome(Verdict.BACKLOG_FULL)
            if (limited := self._over_rate(s, now)) is not None:
                return limited
        # the awaits above: another copy may have come meanwhile (a MAYBE was answered already)
        again = self._first(key, now)
        first = None if isinstance(again, str) else again
        if first is not None:
            self._rate.add(uid, now)
            return await self._duplicate(s, first, now)
        self._rate.add(uid, now)
        return await self._accept(s, key, now)

    def _over_rate(self, s: Submission, now: float) -> Outcome | None:
        """RATE_LIMITED (logged) when the webhook's window is full, else None."""
        retry = self._rate.retry_ms(s.target.webhook_uid, RATE_LIMIT, now)
        if retry is None:
            return None
        self._log(s.target, s.delivery_id, len(s.body), _RATE_LIMITED, now)
        return Outcome(Verdict.RATE_LIMITED, retry_after_ms=retry)

    def _first(self, key: bytes, now: float) -> First | str | None:
        """The first copy's delivery id, and its commit while that is still under way; MAYBE
        (a str) when only the store can tell."""
        committing = self._committing_firsts.get(key)
        if committing is not None:
            return committing
        delivery_id = self._seen.first(key, now)
        if delivery_id is None or delivery_id == MAYBE:
            return delivery_id
        return delivery_id, None

    async def _first_in_store(self, key: bytes, s: Submission, now: float) -> First | None:
        """The first copy of `s` in the store within the window (batched with other requests'
        look-ups: gateway/foundation/backends/first_copies.py)."""
        wanted = Wanted(
            s.target.webhook_uid,
            s.identity,
            _when(now - DEDUP_WINDOW_S * 1000),
            _when(self._seen.forgotten_until_ms + ID_TO_RECEIPT_SLACK_MS),
        )
        try:
            found = await self._first_copies.find(wanted)
        except Exception as exc:
            raise Unavailable("delivery log unavailable; nothing was recorded") from exc
        committing = self._committing_firsts.get(key)  # a copy began committing meanwhile
        if committing is not None:
            return committing
        if found is None:
            return None
        self._seen.remember(key, found, ids.millis_of(found) or now)
        return found, None

    async def _duplicate(self, s: Submission, first: First, now: float) -> Outcome:
        first_id, commit = first
        if commit is not None:  # the first copy is still committing: its fate is ours
            try:
                await asyncio.shield(commit)
            except Exception as exc:
                raise Unavailable("delivery log unavailable; nothing was recorded") from exc
        record = DeliveryRecord(
            s.delivery_id,
            s.target.webhook_uid,
            _when(now),
            len(s.body),
            Label.DUPLICATE,
            identity=s.identity,
            duplicate_of=first_id,
        )
        self._log_record(s.target, record, now)
        return Outcome(Verdict.DUPLICATE, delivery_id=first_id)

    async def _accept(self, s: Submission, key: bytes, now: float) -> Outcome:
        pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._committing_firsts[key] = (s.delivery_id, pending)
        record = DeliveryRecord(
            s.delivery_id,
            s.target.webhook_uid,
            _when(now),
            len(s.body),
            Label.ACCEPTED,
            identity=s.identity,
            payload=s.body,
            headers=s.headers or None,
        )
        self.backlog += 1
        self._committing += 1
        try:
            await self.log.write(record)
        except Exception as exc:
            # undo the reservation: no marker and no slot for a delivery that was not recorded
            del self._committing_firsts[key]
            self._rate.remove(s.target.webhook_uid, now)
            self.backlog = max(0, self.backlog - 1)
            pending.set_exception(exc)
            pending.exception()  # retrieved here; waiting duplicates re-raise it
            raise Unavailable("delivery log unavailable; nothing was recorded") from exc
        finally:
            self._committing -= 1
        pending.set_result(None)
        del self._committing_firsts[key]
        self._seen.remember(key, s.delivery_id, now)
        return Outcome(Verdict.ACCEPTED, delivery_id=s.delivery_id)

    async def auth_failed(
        self, target: Target, source: str, delivery_id: str, size: int, reason: Reason
    ) -> Outcome:
        now = time.time() * 1000
        key = (target.webhook_uid, source)
        retry = self._auth.retry_ms(key, self.auth_failure_limit, now)
        if retry is not None:
            self._log(target, delivery_id, size, _AUTH_LIMITED, now)
            return Outcome(Verdict.AUTH_LIMITED, retry_after_ms=retry)
        self._auth.add(key, now)
        self._log(target, delivery_id, size, (Label.AUTH, reason), now)
        return Outcome(Verdict.AUTH_REJECTED)

    async def log_rejection(
        self, target: Target, delivery_id: str, size: int, label: Label, reason: Reason
    ) -> None:
        self._log(target, delivery_id, size, (label, reason), time.time() * 1000)

    def _log(
        self,
        target: Target,
        delivery_id: str,
        size: int,
        rejection: tuple[Label, Reason],
        now: float,
    ) -> None:
        label, reason = rejection
        record = DeliveryRecord(
            delivery_id, target.webhook_uid, _when(now), size, label, reason=reason
        )
        self._log_record(target, record, now)

    def _log_record(self, target: Target, record: DeliveryRecord, now: float) -> None:
        if self._rejects.retry_ms(target.webhook_uid, REJECT_LOG_LIMIT, now) is not None:
            # capped: a flood of rejections cannot flood storage; a refusal is still counted
            if record.reason is not None:
                self.unlogged.add(target.webhook_uid, record.reason.value, now)
            return
        self._rejects.add(target.webhook_uid, now)
        self.log.write_later(record)

    async def close(self) -> None:
        await self._first_copies.close()
        await self.log.close()


# the (label, reason) of each rejection the backend decides itself
_AUTH_LIMITED = (Label.RATE_LIMITED, Reason.AUTH_RATE_LIMITED)
_RATE_LIMITED = (Label.RATE_LIMITED, Reason.RATE_LIMITED)
_INVALID_JSON = (Label.INVALID_JSON, Reason.INVALID_JSON)


def _when(now_ms: float) -> datetime:
    return datetime.fromtimestamp(now_ms / 1000, UTC)
