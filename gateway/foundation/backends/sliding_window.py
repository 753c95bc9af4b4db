"""Rolling-window counts in memory: the embedded backend's rate limits, per-caller budgets."""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """Timestamps (ms) of the last `window` per key: a true sliding window, no boundary burst."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._entries: dict[object, deque[float]] = {}

    def _live(self, key: object, now: float) -> deque[float]:
        entries = self._entries.get(key)
        if entries is None:
            return deque()
        while entries and entries[0] <= now - self.window_ms:
            entries.popleft()
        if not entries:
            del self._entries[key]
        return entries

    def retry_ms(self, key: object, limit: int, now: float) -> int | None:
        """None when under `limit`, else ms until a slot frees."""
        entries = self._live(key, now)
        if len(entries) < limit:
            return None
        return max(1, int(entries[len(entries) - limit] + self.window_ms - now))

    def add(self, key: object, now: float) -> None:
        self._entries.setdefault(key, deque()).append(now)

    def remove(self, key: object, stamp: float) -> None:
        entries = self._entries.get(key)
        if entries is not None and stamp in entries:
            entries.remove(stamp)
