"""Redis source: the 16 shard Streams, read with a consumer group.

Each command names ONE stream, so every command stays within one hash slot and the same code
works against Redis Cluster (where one XREADGROUP over streams in different slots is refused with
CROSSSLOT). The 16 reads go out as one pipeline per pass, non-blocking; when a pass finds nothing
the source sleeps `idle_wait` (a blocking read can only wait on one slot).

Entries are acknowledged (XACK) and deleted (XDEL) only after the SQL transaction that logged
them committed; the keys holding large bodies (named by the entry's field `k`) are deleted with
them. Entries a dead consumer left pending are taken over with XAUTOCLAIM once idle for
CLAIM_IDLE_MS; this consumer's own unacknowledged entries are re-read after a failed batch.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.backends.base import DeliveryRecord, Label
from gateway.backends.redis import KeySpace
from gateway.worker.consumer import Entry

log = logging.getLogger("gateway.worker")

GROUP = "evaluator"
# bodies read per shard and pass: large bodies mean fewer entries per read, so that one read
# never holds Redis (which answers ingress) for long, nor fills this process's memory
READ_BYTES_PER_SHARD = 256 * 1024
CLAIM_IDLE_MS = 30_000
CLAIM_EVERY_S = 10.0


class StreamSource:
    def __init__(
        self, redis: Redis, keyspace: KeySpace, *, batch: int = 4, idle_wait: float = 0.05
    ) -> None:
        self.redis = redis
        self.streams = keyspace.streams()
        # most entries per stream and pass: at most 16 * batch per SQL transaction (wiring.py
        # picks it: small beside ingress in one event loop, larger in a process of its own)
        self.batch = batch
        self.count = batch  # entries per shard and read, lowered while bodies are large
        self.idle_wait = idle_wait
        self.consumer = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._groups_ready = False
        self._own_pending = True  # on start, re-read anything this name left unacknowledged
        self._next_claim = 0.0

    async def read(self) -> list[Entry]:
        if not self._groups_ready:
            await self._create_groups()
        if time.monotonic() >= self._next_claim:
            self._next_claim = time.monotonic() + CLAIM_EVERY_S
            claimed = await self._claim()
            if claimed:
                return claimed
        if self._own_pending:
            self._own_pending = False
            pending = await self._read_group("0")
            if pending:
                return pending
        entries = await self._read_group(">")
        if not entries:
            await asyncio.sleep(self.idle_wait)
        return entries

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
                raw += _raw_entries(stream, items)
        entries = await self._entries(raw)
        if entries:
            largest = max(entry.record.size for entry in entries)
            self.count = max(1, min(self.batch, READ_BYTES_PER_SHARD // max(largest, 1)))
        return entries

    async def _claim(self) -> list[Entry]:
        raw: list[RawEntry] = []
        for stream in self.streams:
            reply: Any = await self.redis.xautoclaim(
                stream, GROUP, self.consumer, CLAIM_IDLE_MS, "0-0", count=self.batch
            )
            raw += _raw_entries(stream, list(reply[1]))
        entries = await self._entries(raw)
        if entries:
            log.info("delivery consumer: took over %d entries of dead consumers", len(entries))
        return entries

    async def _entries(self, raw: list[RawEntry]) -> list[Entry]:
        """Records of the read entries; large bodies are fetched from their own keys."""
        body_keys = [fields[b"k"] for _, _, fields in raw if b"k" in fields]
        bodies: dict[bytes, bytes | None] = {}
        if body_keys:
            async with self.redis.pipeline(transaction=False) as pipe:
                for key in body_keys:
                    pipe.get(key)
                bodies = dict(zip(body_keys, await pipe.execute(), strict=True))
        entries = []
        for stream, entry_id, fields in raw:
            body_key = fields.get(b"k")
            payload = bodies.get(body_key) if body_key is not None else fields.get(b"p")
            if body_key is not None and payload is None:
                log.error(
                    "delivery %s: its body is gone from Redis (%s); logged without payload",
                    fields[b"d"].decode(),
                    body_key.decode(),
                )
            entries.append(Entry((stream, entry_id, body_key), _record(fields, payload)))
        return entries

    async def settle(self, conn: AsyncConnection, entries: Sequence[Entry]) -> None:
        return None

    async def acknowledge(self, entries: Sequence[Entry]) -> None:
        by_stream: dict[Any, list[Any]] = {}
        body_keys: list[bytes] = []
        for entry in entries:
            stream, entry_id, body_key = entry.token
            by_stream.setdefault(stream, []).append(entry_id)
            if body_key is not None:
                body_keys.append(body_key)
        async with self.redis.pipeline(transaction=False) as pipe:
            for stream, ids in by_stream.items():
                pipe.xack(stream, GROUP, *ids)
                pipe.xdel(stream, *ids)
            for key in body_keys:  # one key per command: each may live in its own slot
                pipe.delete(key)
            await pipe.execute()

    async def retry_later(self, entries: Sequence[Entry]) -> None:
        self._own_pending = True


RawEntry = tuple[Any, Any, dict[bytes, bytes]]  # stream, entry id, fields


def _raw_entries(stream: Any, items: list[Any]) -> list[RawEntry]:
    # an entry deleted while pending comes back without fields
    return [(stream, entry_id, fields) for entry_id, fields in items if fields]


def _record(f: dict[bytes, bytes], payload: bytes | None) -> DeliveryRecord:
    def text(name: bytes) -> str | None:
        value = f.get(name)
        return value.decode() if value else None

    return DeliveryRecord(
        delivery_id=f[b"d"].decode(),
        webhook_uid=f[b"w"].decode(),
        received_at=datetime.fromtimestamp(int(f[b"t"]) / 1000, UTC),
        size=int(f[b"n"]),
        label=Label(f[b"l"].decode()),
        identity=text(b"i"),
        duplicate_of=text(b"f"),
        payload=payload if f[b"l"] == Label.ACCEPTED.value.encode() else None,
    )
