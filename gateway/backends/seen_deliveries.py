"""The embedded backend's de-duplication memory: the delivery that first carried each
(webhook, identity) within the window (7 days), in bounded memory.

The most recent `exact` entries are held exactly: the key a 16-byte digest, the value the first
delivery's id (whose creation time is in the id: `ids.millis_of`), in chunks of CHUNK entries,
nothing the garbage collector tracks (~230 bytes an entry; a tuple key and a slotted object per
entry made full collections visit the week's deliveries: 40-65 ms pauses at 200,000). Older
entries leave for one Bloom filter per day of arrival (a fixed FILTER_BYTES each, dropped once
past the window): a key none of them holds was not seen, with no look-up; a key one may hold is
MAYBE, and the caller confirms it in the store (the outbox and the delivery log). So memory stays
bounded whatever the week's traffic, and a miss, the common case, costs no SQL.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Final

from gateway import ids

DAY_MS = 86_400_000
CHUNK = 4_096  # exact entries per chunk: the oldest chunk leaves at once
FILTER_BYTES = 1 << 20  # per day: 8 Mbit, ~1 % false positives at 870,000 keys
HASHES = 4
MAYBE: Final = "maybe"  # `first`'s answer when only the store can tell


def seen_key(webhook_uid: str, identity: str) -> bytes:
    return hashlib.blake2b(f"{webhook_uid}\n{identity}".encode(), digest_size=16).digest()


class DayFilter:
    """A Bloom filter of the keys (16-byte digests) that arrived on one day."""

    def __init__(self, size_bytes: int = FILTER_BYTES) -> None:
        self._bits = bytearray(size_bytes)
        self._modulus = size_bytes * 8

    def _positions(self, key: bytes) -> list[int]:
        # the digest is uniform already: four 32-bit slices of it are the four positions
        return [int.from_bytes(key[i : i + 4], "little") % self._modulus for i in (0, 4, 8, 12)]

    def add(self, key: bytes) -> None:
        bits = self._bits
        for position in self._positions(key):
            bits[position >> 3] |= 1 << (position & 7)

    def may_hold(self, key: bytes) -> bool:
        bits = self._bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self._positions(key))


class SeenDeliveries:
    def __init__(self, window_ms: int, exact: int = 65_536) -> None:
        self.window_ms = window_ms
        self.exact = max(exact, CHUNK)
        self._chunks: deque[dict[bytes, str]] = deque([{}])
        self._held = 0
        self._filters: dict[int, DayFilter] = {}  # day of arrival -> the keys that left memory

    def __len__(self) -> int:
        """Entries held exactly."""
        return self._held

    def first(self, key: bytes, now_ms: float) -> str | None:
        """The delivery that carried `key` within the window before `now_ms`, None when none
        did, or MAYBE when only the store can tell."""
        for chunk in reversed(self._chunks):  # newest first: a key seen again is found there
            found = chunk.get(key)
            if found is not None:
                received = ids.millis_of(found)
                if received is None or now_ms - received < self.window_ms:
                    return found
                return None  # its newest copy is past the window
        horizon = int((now_ms - self.window_ms) // DAY_MS)
        for day, seen in self._filters.items():
            if day >= horizon and seen.may_hold(key):
                return MAYBE
        return None

    def remember(self, key: bytes, delivery_id: str, received_ms: float) -> None:
        chunk = self._chunks[-1]
        if len(chunk) >= CHUNK:
            chunk = {}
            self._chunks.append(chunk)
        chunk[key] = delivery_id
        self._held += 1
        while self._held > self.exact:
            self._let_go(self._chunks.popleft(), received_ms)

    def forget(self, key: bytes) -> None:
        """Undo `remember` (the delivery was not recorded after all)."""
        for chunk in reversed(self._chunks):
            if chunk.pop(key, None) is not None:
                self._held -= 1
                return

    def _let_go(self, chunk: dict[bytes, str], now_ms: float) -> None:
        self._forget_days_before(now_ms - self.window_ms)
        self._held -= len(chunk)
        for key, delivery_id in chunk.items():
            received = ids.millis_of(delivery_id) or 0
            day = received // DAY_MS
            seen = self._filters.get(day)
            if seen is None:
                seen = self._filters[day] = DayFilter()
            seen.add(key)

    def _forget_days_before(self, horizon_ms: float) -> None:
        gone = [day for day in self._filters if (day + 1) * DAY_MS <= horizon_ms]
        for day in gone:
            del self._filters[day]
