"""Redis source: the 16 shard Streams, read with a consumer group.

Each command names ONE stream, so every command stays within one hash slot and the same code
works against Redis Cluster (where one XREADGROUP over streams in different slots is refused with
CROSSSLOT). The 16 reads go out as one pipeline per pass, non-blocking; when a pass finds nothing
the source sleeps `idle_wait` (a blocking read can only wait on one slot).

The batch transaction logs the entries in SQL (`claim`: a delivery already logged was evaluated
before and is skipped). Only after it commits are they acknowledged and deleted, one ACK script
per shard that also lowers the backlog counter, drops their pending-index fields (read-your-writes
for the delivery log API) and deletes the keys holding large bodies (the entry's field `k`).
Entries a dead consumer left pending are taken over with XAUTOCLAIM once idle for CLAIM_IDLE_MS
(looked for every CLAIM_EVERY_S, and at once again while a look finds some: one takes at most a
read's worth); this consumer's own unacknowledged entries are re-read after a failed batch. Every
RECOUNT_EVERY_S the backlog counter is set to what the streams hold, in case something deleted
entries by hand.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import socket
import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import RedisCluster
from redis.exceptions import ResponseError
from sqlalchemy.engine import Dialect

from gateway.foundation.backends.contract import Label, shard_of
from gateway.foundation.backends.lua_scripts import ACK_SCRIPT, RECOUNT_SCRIPT
from gateway.foundation.backends.redis_clients import AnyRedis
from gateway.foundation.backends.redis_keys import KeySpace
from gateway.kernel.event_waits import wait_event
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.trace import TraceWrites
from gateway.webhook_gateway.transports.contract import (
    Claim,
    Entry,
    first_rows_per_read,
    rows_per_read,
)
from gateway.webhook_gateway.transports.redis_stream.entries import (
    RawEntry,
    body_key,
    raw_entries,
    record_of,
)

log = logging.getLogger("gateway.evaluator")

GROUP = "evaluator"
# bodies read per shard and pass: large bodies mean fewer entries per read, so that one read
# never holds Redis (which answers ingress) for long, nor fills this process's memory
READ_BYTES_PER_SHARD = 256 * 1024
CLAIM_IDLE_MS = 30_000
CLAIM_EVERY_S = 10.0
RECOUNT_EVERY_S = 30.0


class StreamSource:
    def __init__(
        self, redis: AnyRedis, keyspace: KeySpace, *, batch: int = 4, idle_wait: float = 0.05
    ) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.streams = keyspace.streams()
        self._ack = redis.register_script(ACK_SCRIPT)
        self._recount = redis.register_script(RECOUNT_SCRIPT)
        self._next_recount = 0.0
        # most entries per stream and pass: at most 16 * batch per SQL transaction (wiring.py
        # picks it: small beside ingress in one event loop, larger in a process of its own)
        self.batch = batch
        # entries per shard and read, lowered while bodies are large (the first read after a
        # start, a take-over of dead consumers' entries among them, assumes the largest)
        self.count = first_rows_per_read(batch, READ_BYTES_PER_SHARD)
        self.idle_wait = idle_wait
        self.consumer = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._groups_ready = False
        self._own_pending = True  # on start, re-read anything this name left unacknowledged
        self._next_claim = 0.0
        self._stopped = asyncio.Event()  # set by stop_waiting: an idle wait ends

    async def read(self) -> list[Entry]:
        if not self._groups_ready:
            await self._create_groups()
        if time.monotonic() >= self._next_claim:
            claimed = await self._claim()
            if claimed:  # taken over `count` a shard at most: more may be left, claim again
                return claimed
            self._next_claim = time.monotonic() + CLAIM_EVERY_S
        if time.monotonic() >= self._next_recount:
            self._next_recount = time.monotonic() + RECOUNT_EVERY_S
            for counter, streams in self.keyspace.backlog_counters():
                await self._recount(keys=[counter, *streams])
        if self._own_pending:
            self._own_pending = False
            pending = await self._read_group("0")
            if pending:
                return pending
        entries = await self._read_group(">")
        if not entries:
            await wait_event(self._stopped, self.idle_wait)
        return entries

    def stop_waiting(self) -> None:
        self.idle_wait = 0.0
        self._stopped.set()

    async def _create_groups(self) -> None:
        for stream in self.streams:
            try:
                # id 0: entries appended before the first consumer ever started are read too
                await self.redis.xgroup_create(stream, GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._groups_ready = True

    async def _read_group(self, start: str) -> list[Entry]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for stream in self.streams:
                pipe.xreadgroup(GROUP, self.consumer, {stream: start}, count=self.count)
            replies: list[Any] = await pipe.execute()
        raw: list[RawEntry] = []
        for reply in replies:
            for stream, items in reply or []:
                raw += raw_entries(stream, items)
        entries = await self._entries(raw)
        self._learn_sizes(entries)
        return entries

    async def _claim(self) -> list[Entry]:
        raw: list[RawEntry] = []
        for stream in self.streams:
            reply: Any = await self.redis.xautoclaim(
                stream, GROUP, self.consumer, CLAIM_IDLE_MS, "0-0", count=self.count
            )
            raw += raw_entries(stream, list(reply[1]))
        entries = await self._entries(raw)
        if entries:
            log.info("delivery consumer: took over %d entries of dead consumers", len(entries))
        self._learn_sizes(entries)
        return entries

    def _learn_sizes(self, entries: list[Entry]) -> None:
        """The next read's count, from the sizes of the bodies just read (none read: unchanged)."""
        if entries:
            records = [entry.record for entry in entries]
            self.count = rows_per_read(self.batch, READ_BYTES_PER_SHARD, records)

    async def _entries(self, raw: list[RawEntry]) -> list[Entry]:
        """Records of the read entries; large bodies are fetched from their own keys."""
        keys = [key for _, _, fields in raw if (key := body_key(fields)) is not None]
        bodies: dict[bytes, bytes | None] = {}
        if keys:
            async with self.redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.get(key)
                bodies = dict(zip(keys, await pipe.execute(), strict=True))
        entries = []
        for stream, entry_id, fields in raw:
            key = body_key(fields)
            payload = bodies.get(key) if key is not None else fields.get(b"p")
            if key is not None and payload is None:
                log.error(
                    "delivery %s: its body is gone from Redis (%s); logged without payload",
                    fields[b"d"].decode(),
                    key.decode(),
                )
            entries.append(Entry((stream, entry_id, key), record_of(fields, payload)))
        return entries

    def claim(
        self, entries: Sequence[Entry], dialect: Dialect, traces: TraceWrites | None = None
    ) -> Claim:
        records = [entry.record for entry in entries]
        prepared = delivery_log.prepare_log(dialect, records, traces)
        return functools.partial(delivery_log.log_new, prepared=prepared)

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        """One ACK script per shard stream: all in one pipeline on one Redis; on Cluster side by
        side (a script in a cluster pipeline would not be loaded again after NOSCRIPT, as on a
        replica just promoted)."""
        by_stream: dict[Any, list[Entry]] = {}
        for entry in entries:
            by_stream.setdefault(entry.token[0], []).append(entry)
        calls = [self._ack_call(stream, own) for stream, own in by_stream.items()]
        if isinstance(self.redis, RedisCluster):
            await asyncio.gather(*(self._ack(keys=keys, args=args) for keys, args in calls))
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                await self._ack(keys=keys, args=args, client=pipe)
            await pipe.execute()

    def _ack_call(self, stream: Any, entries: list[Entry]) -> tuple[list[Any], list[Any]]:
        """ACK_SCRIPT's keys and arguments for one stream's entries."""
        shard = shard_of(entries[0].record.webhook_uid)  # every entry of a stream has its shard
        by_webhook: dict[str, list[str]] = {}  # webhook uid -> its accepted delivery ids
        body_keys = []
        for entry in entries:
            record = entry.record
            if record.label is Label.ACCEPTED:
                by_webhook.setdefault(record.webhook_uid, []).append(record.delivery_id)
            if entry.token[2] is not None:
                body_keys.append(entry.token[2])
        args: list[Any] = [GROUP, len(entries), *(entry.token[1] for entry in entries)]
        args.append(len(by_webhook))
        for ids in by_webhook.values():
            args += [len(ids), *ids]
        pending = [self.keyspace.pending(uid, shard) for uid in by_webhook]  # their indexes
        return [stream, self.keyspace.backlog(shard), *pending, *body_keys], args

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._own_pending = True


# stream entries read per shard and pass (16 shards): at most 64 / 1,024 per SQL transaction (a
# worker of its own: per-batch statements and round trips amortised over more deliveries;
# 16 -> 64 took the evaluator from ~14k to ~20k deliveries/s that match nothing, ~5.6k to ~7.8k
# that start a run, on SQLite)
INLINE_BATCH_PER_SHARD = 4
DEDICATED_BATCH_PER_SHARD = 64


def evaluator_source(redis: AnyRedis, keyspace: KeySpace, *, dedicated: bool) -> StreamSource:
    """Sharing the event loop with ingress, the evaluator reads small batches so that it never
    stalls requests for long; in a process of its own (`dedicated`), larger batches mean fewer
    commits."""
    batch = DEDICATED_BATCH_PER_SHARD if dedicated else INLINE_BATCH_PER_SHARD
    return StreamSource(redis, keyspace, batch=batch)
