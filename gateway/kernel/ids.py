"""Public identifiers: a short type prefix and 128 random bits, sortable by creation time."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


def new_id(prefix: str) -> str:
    """`prefix_` + 12 hex digits of milliseconds + 20 random hex digits."""
    return f"{prefix}_{int(time.time() * 1000):012x}{random_bytes(10).hex()}"


# os.urandom lets go of the GIL for its getrandom() call, and under load another thread (a
# database driver's, the outbox's) took it at nearly every one: an id cost a hand-over of the
# GIL and back. So the operating system's random bytes are drawn POOL_BYTES at a time and
# handed out in order, each byte once; a forked child starts a pool of its own.
POOL_BYTES = 4096
_pool_lock = threading.Lock()
_pool = b""
_taken = 0


def random_bytes(count: int) -> bytes:
    """`count` (at most POOL_BYTES) bytes from the operating system's random source."""
    global _pool, _taken
    with _pool_lock:
        if _taken + count > len(_pool):
            _pool, _taken = os.urandom(POOL_BYTES), 0
        start, _taken = _taken, _taken + count
        return _pool[start:_taken]


def _new_pool_in_child() -> None:
    global _pool, _taken, _pool_lock
    _pool, _taken, _pool_lock = b"", 0, threading.Lock()


os.register_at_fork(after_in_child=_new_pool_in_child)


# Provider connections share the ingress cache, the backend keys and the delivery log with custom
# webhooks (docs/ingress.md, "Provider connections"): their uids tell them apart.
CONNECTION_PREFIX = "pcn"
_CONNECTION_START = CONNECTION_PREFIX + "_"


def is_connection(uid: str) -> bool:
    """Whether `uid` names a provider connection (else a custom webhook)."""
    return uid.startswith(_CONNECTION_START)


def millis_of(public_id: str) -> int | None:
    """The creation time (Unix ms) of an id made by `new_id`; None for any other string."""
    _prefix, sep, rest = public_id.partition("_")
    try:
        return int(rest[:12], 16) if sep and len(rest) >= 12 else None
    except ValueError:
        return None


def new_uuid() -> str:
    """A time-ordered (version 7, RFC 9562) UUID string, for run and conversation ids that
    clients parse as UUIDs: 48 bits of Unix milliseconds, then 74 random bits. New ids land at
    the end of the indexes that hold them instead of on random pages (random version 4 ids
    made the evaluator's inserts ~2x slower once the tables outgrew the page cache)."""
    raw = bytearray(int(time.time() * 1000).to_bytes(6, "big") + random_bytes(10))
    raw[6] = raw[6] & 0x0F | 0x70  # version 7
    raw[8] = raw[8] & 0x3F | 0x80  # RFC 9562 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def new_uuids(count: int) -> list[str]:
    """`count` ids as `new_uuid` makes them, from one clock reading and one draw of random
    bytes (the evaluator takes two per run, thousands a second)."""

    def chunk(millis: int, r: str, size: int) -> list[str]:
        ms = f"{millis:012x}"
        head = f"{ms[:8]}-{ms[8:]}-7"
        return [
            f"{head}{r[i + 1 : i + 4]}-{_VARIANT[r[i + 4]]}{r[i + 5 : i + 8]}-{r[i + 8 : i + 20]}"
            for i in range(0, 20 * size, 20)
        ]

    return _drawn(count, chunk)


def new_ids(prefix: str, count: int) -> list[str]:
    """`count` ids as `new_id(prefix)` makes them, from one clock reading and one draw."""

    def chunk(millis: int, r: str, size: int) -> list[str]:
        head = f"{prefix}_{millis:012x}"
        return [head + r[i : i + 20] for i in range(0, 20 * size, 20)]

    return _drawn(count, chunk)


def _drawn(count: int, chunk: Callable[[int, str, int], list[str]]) -> list[str]:
    """`count` ids made by `chunk(milliseconds, hex of 10 random bytes per id, size)`, a pool's
    worth of random bytes at most per chunk."""
    made: list[str] = []
    while len(made) < count:
        size = min(count - len(made), POOL_BYTES // 10)
        made += chunk(int(time.time() * 1000), random_bytes(10 * size).hex(), size)
    return made


class IdSupply:
    """Ids for a batch of rows, made `BATCH` at a time (`new_uuids`, `new_ids`)."""

    BATCH = 256
    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[str, list[str]] = {}

    def uuid(self) -> str:
        return self._take("", new_uuids)

    def id(self, prefix: str) -> str:
        return self._take(prefix, lambda count: new_ids(prefix, count))

    def _take(self, kind: str, make: Callable[[int], list[str]]) -> str:
        made = self._made.get(kind)
        if not made:
            made = self._made[kind] = make(self.BATCH)
            made.reverse()  # taken from the end, in the order made
        return made.pop()
