"""The delivery consumer: read a batch, plan its runs, then one short SQL transaction that claims
the batch in the delivery log and writes the runs; acknowledged only after it commits.

Everything that costs CPU (parsing, matching, building rows) happens before the transaction, so
the write lock (SQLite has one writer) is held only for the inserts themselves. The two stages
overlap: while one batch's transaction runs (in the database driver's thread, or PostgreSQL), the
next batch is read and planned.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.foundation.backends.contract import REPLAY_IDENTITY, Label
from gateway.foundation.events import log as event_log
from gateway.foundation.store import Database
from gateway.kernel.event_waits import pause
from gateway.kernel.logs import OutageLog
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.rejection_events import record_rejections
from gateway.webhook_gateway.evaluator.delivery_runs import AcceptedDelivery, RunBatch, RunStarter
from gateway.webhook_gateway.transports.contract import Claim, Entry, Source

log = logging.getLogger("gateway.evaluator")

PRUNE_EVERY_S = 60.0
REPORT_EVERY_S = 10.0
# SQLite: after each commit the consumer leaves the file's one write lock free this long before
# its next transaction, so a writer in another process (the API's) gets it (SQLite's lock is not
# fair: back-to-back transactions kept a waiting commit waiting for a second)
SQLITE_COMMIT_GAP_S = 0.003


@dataclass(frozen=True, slots=True)
class Planned:
    entries: Sequence[Entry]
    claim: Claim
    batch: RunBatch


class Consumer:
    def __init__(
        self,
        database: Database,
        source: Source,
        starter: RunStarter,
        on_runs_started: Callable[[], None] | None = None,
    ) -> None:
        self.database = database
        self.source = source
        self.starter = starter
        self.on_runs_started = on_runs_started  # after the commit of a batch that started runs
        self.processed = 0
        self.batches = 0  # transactions written: processed / batches is the batch size
        self.runs_started = 0
        self._next_prune = time.monotonic() + 5.0
        self._next_report = time.monotonic() + REPORT_EVERY_S
        self._reported = (0, 0, 0)
        self._stopping = False
        # planned by the reader, their transactions not ended yet, oldest first: the next
        # batch is planned as if they were written (`RunStarter.plan`)
        self._unwritten: list[RunBatch] = []
        # an unreachable Redis or store is logged once per interval, and its recovery
        self._reading = OutageLog(log, "delivery consumer: reading")
        self._writing = OutageLog(log, "delivery consumer: writing")

    async def run(self) -> None:
        """Until cancelled, or until `stop`: then the batch in hand is written and it returns
        (cancelled mid-batch, the transaction rolls back and the entries are read again later,
        after a dead consumer's idle time on Redis)."""
        log.info("delivery consumer started (%s)", type(self.source).__name__)
        await self._warm_up()
        planned: asyncio.Queue[Planned | None] = asyncio.Queue(maxsize=1)
        async with asyncio.TaskGroup() as group:
            group.create_task(self._read_and_plan(planned), name="consumer-plan")
            group.create_task(self._write_planned(planned), name="consumer-write")
        log.info("delivery consumer stopped")

    async def _warm_up(self) -> None:
        started = time.monotonic()
        try:
            warmed = await self.starter.index.warm_up(self.database)
        except Exception as exc:  # the deliveries' own look-ups read what they need all the same
            log.warning("delivery consumer: automations not read ahead: %s", exc)
        else:
            log.info(
                "delivery consumer: automations of %d webhooks and of %d teams' provider "
                "connections compiled in %.1f s",
                warmed.webhooks,
                warmed.teams,
                time.monotonic() - started,
            )
        # The compiled configuration (millions of objects on a large store) lives as long as the
        # process: frozen, the collector stops re-scanning it. Unfrozen, full collections over
        # it cost the evaluator a quarter of its CPU (measured: 170 -> 134 us a delivery).
        gc.collect()
        gc.freeze()

    def stop(self) -> None:
        """Stop reading; `run` returns once what was read is written."""
        self._stopping = True
        self.source.stop_waiting()  # an idle source would notice only after its wait

    async def _read_and_plan(self, planned: asyncio.Queue[Planned | None]) -> None:
        while not self._stopping:
            entries: Sequence[Entry] = ()
            try:
                entries = await self.source.read()
                if entries:
                    batch = await self._plan(entries, ahead=True)
                    entries = ()  # planned: the writer owns them now
                    await planned.put(batch)
                await self._maybe_prune()
                self._maybe_report()
                self._reading.succeeded()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep consuming: Redis or SQL may be back in a moment
                self._reading.failed(exc)
                if entries:  # read but not planned: the source must hand them out again
                    await self.source.retry_later(entries)
                await pause(1.0)
        await planned.put(None)  # the writer's cue to end

    async def _write_planned(self, planned: asyncio.Queue[Planned | None]) -> None:
        while (batch := await planned.get()) is not None:
            try:
                await self._write_or_isolate(batch)
                self._writing.succeeded()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # retried by the source; keep writing the next ones
                self._writing.failed(exc)
                await pause(1.0)

    async def process(self, entries: Sequence[Entry]) -> None:
        """One batch, planned and written (the stages in sequence)."""
        await self._write_or_isolate(await self._plan(entries))

    async def _write_or_isolate(self, planned: Planned) -> None:
        try:
            await self._write(planned)
        except Exception:
            entries = planned.entries
            if len(entries) == 1:
                await self.source.retry_later(entries)
                raise
            # isolate a poison entry: the others must not wait behind it
            for entry in entries:
                try:
                    await self._write(await self._plan([entry]))
                except Exception as exc:
                    log.error("delivery %s not logged yet: %s", entry.record.delivery_id, exc)
                    await self.source.retry_later([entry])

    async def _plan(self, entries: Sequence[Entry], ahead: bool = False) -> Planned:
        """`ahead`: the reader's, planned while earlier batches are written (a batch planned
        to isolate a failed one comes after those, so nothing in flight is earlier)."""
        # taken before the read: a batch that commits after it is in the list, one before
        # it is stored
        unwritten = tuple(self._unwritten) if ahead else ()
        accepted = [
            AcceptedDelivery(
                r.delivery_id,
                r.webhook_uid,
                r.received_at,
                r.payload,
                r.headers,
                replay=r.identity is not None and r.identity.startswith(REPLAY_IDENTITY),
            )
            for r in (entry.record for entry in entries)
            if r.label is Label.ACCEPTED and r.payload is not None
        ]
        async with self.database.read() as conn:
            batch = await self.starter.plan(conn, accepted, unwritten)
            claim = self.source.claim(entries, conn.dialect, batch.traces)
        if ahead:
            self._unwritten.append(batch)
        return Planned(entries, claim, batch)

    async def _write(self, planned: Planned) -> None:
        entries = planned.entries
        try:
            async with self.database.transaction() as conn:
                claimed = await planned.claim(conn)
                started = await planned.batch.write(conn, claimed)
                await record_rejections(conn, (entry.record for entry in entries), claimed)
        finally:  # committed (then stored) or rolled back: no longer in flight
            if planned.batch in self._unwritten:
                self._unwritten.remove(planned.batch)
        await self.source.acknowledge(entries)
        if self.database.is_sqlite:
            await pause(SQLITE_COMMIT_GAP_S)
        self.processed += len(entries)
        self.batches += 1
        self.runs_started += len(started)
        if started and self.on_runs_started is not None:
            self.on_runs_started()

    def _maybe_report(self) -> None:
        """One progress line per interval (not per batch: at thousands per second, a line per
        batch would be the loudest thing in the log)."""
        now = time.monotonic()
        if now < self._next_report:
            return
        done = self.processed - self._reported[0]
        batches = self.batches - self._reported[1]
        runs = self.runs_started - self._reported[2]
        elapsed = REPORT_EVERY_S + (now - self._next_report)
        if done:
            log.info(
                "delivery consumer: %d deliveries (%.0f/s) in %d batches, %d runs started "
                "in the last %.0f s",
                done,
                done / elapsed,
                batches,
                runs,
                elapsed,
            )
        self._reported = (self.processed, self.batches, self.runs_started)
        self._next_report = now + REPORT_EVERY_S

    async def _maybe_prune(self) -> None:
        if time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + PRUNE_EVERY_S
        async with self.database.transaction() as conn:
            removed = await delivery_log.prune(conn)
            events = await event_log.prune(conn)
        if removed:
            log.info("delivery log: pruned %d records past retention", removed)
        if events:
            log.info("event log: pruned %d events past retention", events)
