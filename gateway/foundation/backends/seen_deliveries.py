"""The embedded backend's de-duplication memory: the delivery that first carried each
(webhook, identity) within the window (7 days), in bounded memory.

The most recent `exact` entries are held exactly: the key a 16-byte digest, the value the first
delivery's id (whose creation time is in the id: `ids.millis_of`), nothing the garbage collector
tracks (~240 bytes an entry; a tuple key and a slotted object per entry made full collections
visit the week's deliveries: 40-65 ms pauses at 200,000). Older entries leave, oldest first, for
one Bloom filter per day of arrival (FILTER_BITS each, dropped once past the window): a key
none of them holds was not seen, with no look-up; a key one may hold is MAYBE, and the caller
confirms it in the store. So memory stays bounded whatever the week's traffic, and a miss, the
common case, costs one dict look-up and a few bit tests.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Final

from gateway.kernel import ids

DAY_MS = 86_400_000
MIN_EXACT = 4_096
FILTER_BITS = 1 << 23  # per day (1 MiB): ~1 % false positives at 870,000 keys, 0.02 % at 280,000
MAYBE: Final = "maybe"  # `first`'s answer when only the store can tell


def seen_key(webhook_uid: str, identity: str) -> bytes:
    return hashlib.blake2b(f"{webhook_uid}\n{identity}".encode(), digest_size=16).digest()


class DayFilter:
    """A Bloom filter of the keys (16-byte digests) that arrived on one day: four bit positions
    per key, four 32-bit slices of the digest (uniform already) taken modulo a power of two."""

    def __init__(self, bits: int = FILTER_BITS) -> None:
        assert bits & (bits - 1) == 0, "a power of two"
        self._bits = bytearray(bits // 8)
        self._mask = bits - 1

    def _positions(self, key: bytes) -> tuple[int, int, int, int]:
        value, mask = int.from_bytes(key, "little"), self._mask
        return value & mask, (value >> 32) & mask, (value >> 64) & mask, (value >> 96) & mask

    def add(self, key: bytes) -> None:
        bits = self._bits
        for position in self._positions(key):
            bits[position >> 3] |= 1 << (position & 7)

    def may_hold(self, key: bytes) -> bool:
        bits = self._bits
        a, b, c, d = self._positions(key)
        return bool(
            bits[a >> 3] & (1 << (a & 7))
            and bits[b >> 3] & (1 << (b & 7))
            and bits[c >> 3] & (1 << (c & 7))
            and bits[d >> 3] & (1 << (d & 7))
        )


class SeenDeliveries:
    def __init__(self, window_ms: int, exact: int = 65_536) -> None:
        self.window_ms = window_ms
        self.exact = max(exact, MIN_EXACT)
        self._held: dict[bytes, str] = {}
        self._order: deque[bytes] = deque()  # the keys held, oldest first
        self._filters: dict[int, DayFilter] = {}  # day of arrival -> the keys that left memory
        # the creation time (Unix ms, from its id) of the newest delivery whose key left memory:
        # a key answered MAYBE, if it was seen, was first carried no later than that
        self.forgotten_until_ms = 0.0

    def __len__(self) -> int:
        """Entries held exactly."""
        return len(self._held)

    def first(self, key: bytes, now_ms: float) -> str | None:
        """The delivery that carried `key` within the window before `now_ms`, None when none
        did, or MAYBE when only the store can tell."""
        found = self._held.get(key)
        if found is not None:
            received = ids.millis_of(found)
            if received is None or now_ms - received < self.window_ms:
                return found
            return None  # its newest copy is past the window
        if not self._filters:
            return None
        horizon = int((now_ms - self.window_ms) // DAY_MS)
        for day, seen in self._filters.items():
            if day >= horizon and seen.may_hold(key):
                return MAYBE
        return None

    def remember(self, key: bytes, delivery_id: str, received_ms: float) -> None:
        held = self._held
        if key not in held:
            self._order.append(key)
        held[key] = delivery_id
        if len(held) > self.exact:
            self._let_go(self._order.popleft(), received_ms)

    def _let_go(self, key: bytes, now_ms: float) -> None:
        delivery_id = self._held.pop(key)
        created = ids.millis_of(delivery_id)
        created_ms = now_ms if created is None else created
        self.forgotten_until_ms = max(self.forgotten_until_ms, created_ms)
        day = (created or 0) // DAY_MS
        seen = self._filters.get(day)
        if seen is None:
            self._forget_days_before(now_ms - self.window_ms)
            seen = self._filters[day] = DayFilter()
        seen.add(key)

    def _forget_days_before(self, horizon_ms: float) -> None:
        gone = [day for day in self._filters if (day + 1) * DAY_MS <= horizon_ms]
        for day in gone:
            del self._filters[day]
