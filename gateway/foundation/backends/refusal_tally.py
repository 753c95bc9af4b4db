"""The embedded backend's counts of refusals it logs no record of, in memory (one process owns
the backend), per source and reason; taken by the refusal flusher."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.foundation.backends.contract import RefusalCount

MAX_KEYS = 100_000  # (source, reason) pairs held between two flushes


class RefusalTally:
    def __init__(self) -> None:
        # (source, reason) -> [count, first ms, last ms]
        self._counts: dict[tuple[str, str], list[float]] = {}

    def add(self, source_uid: str, reason: str, now_ms: float, count: int = 1) -> None:
        key = (source_uid, reason)
        held = self._counts.get(key)
        if held is None:
            if len(self._counts) >= MAX_KEYS:
                return  # bounded memory (one pair per known source and reason: not reached)
            self._counts[key] = [count, now_ms, now_ms]
            return
        held[0] += count
        held[1] = min(held[1], now_ms)
        held[2] = max(held[2], now_ms)

    async def take(self) -> list[RefusalCount]:
        taken, self._counts = self._counts, {}
        return [
            RefusalCount(source, reason, int(n), _when(first), _when(last))
            for (source, reason), (n, first, last) in taken.items()
        ]

    async def give_back(self, counts: list[RefusalCount]) -> None:
        for c in counts:
            self.add(c.source_uid, c.reason, c.first_at.timestamp() * 1000, c.count)
            self.add(c.source_uid, c.reason, c.last_at.timestamp() * 1000, 0)


def _when(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)
