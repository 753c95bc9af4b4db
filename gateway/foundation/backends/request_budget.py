"""Per-caller request budgets of API endpoints: at most `limit` requests per rolling window.

In memory for one process (the embedded default); in Redis when it is configured, so every
process and host shares one budget per caller. `spend` counts a request and answers None, or
refuses it (counting nothing) with the seconds until a slot frees.
"""

from __future__ import annotations

import math
import secrets
import time
from typing import TYPE_CHECKING, Protocol

from gateway.foundation.backends.sliding_window import SlidingWindow

if TYPE_CHECKING:
    from gateway.foundation.backends.redis_clients import AnyRedis as Redis

WINDOW_MS = 60_000

# KEYS[1]: the caller's sorted set of request stamps (ms)
# ARGV: now_ms, window_ms, limit, member (unique)
# returns 0 when the request was counted, else ms until the oldest counted request leaves
SPEND_SCRIPT = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
if used < limit then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  return 0
end
local oldest = redis.call('ZRANGE', key, used - limit, used - limit, 'WITHSCORES')
return math.max(1, math.ceil(tonumber(oldest[2]) + window - now))
"""


class RequestBudget(Protocol):
    async def spend(self, caller: str) -> int | None: ...


def _seconds(ms: float) -> int:
    return max(1, math.ceil(ms / 1000))


class MemoryBudget:
    def __init__(self, limit: int, window_ms: int = WINDOW_MS) -> None:
        self.limit = limit
        self._window = SlidingWindow(window_ms)

    async def spend(self, caller: str) -> int | None:
        now = time.monotonic() * 1000
        wait = self._window.retry_ms(caller, self.limit, now)
        if wait is not None:
            return _seconds(wait)
        self._window.add(caller, now)
        return None


class RedisBudget:
    def __init__(self, redis: Redis, prefix: str, limit: int, window_ms: int = WINDOW_MS) -> None:
        self.limit = limit
        self._prefix = prefix
        self._window_ms = window_ms
        self._script = redis.register_script(SPEND_SCRIPT)

    async def spend(self, caller: str) -> int | None:
        key = f"{{{self._prefix}:budget:{caller}}}"
        now = int(time.time() * 1000)
        member = f"{now}:{secrets.token_hex(4)}"
        wait = int(await self._script(keys=[key], args=[now, self._window_ms, self.limit, member]))
        return None if wait == 0 else _seconds(wait)
