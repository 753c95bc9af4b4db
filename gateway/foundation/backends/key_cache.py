"""What this process looked up lately, by key, for a few seconds: the API keys it authenticated,
so a runner's many calls skip the SELECTs of authentication (`gateway.foundation.api.auth` decides
what is kept: agents' keys only, whose principal does not change while the key exists), and the
runners whose presence it recorded (`platform/runners/registry.runner_of`). See
docs/runs-and-tasks.md, "Runners".

How long an agent's deleted key may still work:
- deleted through this process (DELETE /agent/identities/{uid}): not at all; the handler calls
  `forget_owner` once the deletion is committed, and a lookup that began before that cannot put
  the old answer back (`generation`);
- deleted through another process of the deployment: at most TTL_S seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

TTL_S = 5.0  # the bound on a key deleted through another process
MAX_KEYS = 10_000  # beyond this the oldest entries go first


class KeyCache:
    def __init__(self, ttl_s: float = TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        # key hash -> (what the key authenticates as, its owner's uid, expiry on `clock`)
        self._entries: dict[str, tuple[object, str, float]] = {}
        # bumped by every forget_owner: a lookup that began before it must not cache its answer
        self.generation = 0

    def get(self, key_hash: str) -> object | None:
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        value, _, expires = entry
        if self._clock() >= expires:
            del self._entries[key_hash]
            return None
        return value

    def put(
        self,
        key_hash: str,
        value: object,
        owner_uid: str,
        generation: int,
        ttl_s: float | None = None,
    ) -> None:
        """Keeps what a lookup that began at `generation` found for the key, for `ttl_s`
        seconds (at most the cache's own)."""
        ttl_s = self.ttl_s if ttl_s is None else min(ttl_s, self.ttl_s)
        if generation != self.generation or ttl_s <= 0:
            return
        if len(self._entries) >= MAX_KEYS:
            del self._entries[next(iter(self._entries))]
        self._entries[key_hash] = (value, owner_uid, self._clock() + ttl_s)

    def forget_owner(self, owner_uid: str) -> None:
        """The owner's keys were deleted: they stop working in this process now."""
        self.generation += 1
        for key_hash in [k for k, (_, owner, _) in self._entries.items() if owner == owner_uid]:
            del self._entries[key_hash]
