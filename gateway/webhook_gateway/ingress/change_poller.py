"""Embedded backend: notice webhook changes made by other processes.

With Redis, every process publishes config versions there. Without it, the serving process only
hears of changes made through its own API; `gateway admin set-secret` or `gateway apply` run in a
process of their own. So the server looks for recently changed webhook and provider connection
rows every POLL_S seconds (every change sets `updated_at`) and reloads those whose version it has
not seen. Each poll reads the rows changed since the last poll that succeeded began (less OVERLAP):
a poll that fails (a locked store) or comes late (a stalled event loop) widens the next one's
window instead of leaving a change behind it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from sqlalchemy import select

from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.event_waits import pause
from gateway.webhook_gateway.ingress.cache import ConfigCache

log = logging.getLogger("gateway.ingress")

POLL_S = 0.5
OVERLAP = timedelta(seconds=5)  # covers commit lag and small clock differences between processes


class ChangePoller:
    def __init__(self, database: Database, cache: ConfigCache) -> None:
        self._database = database
        self._cache = cache
        # the versions the cache holds: a webhook changed shortly before the start was loaded by
        # the preload already (reloading every recently seeded webhook cost seconds of CPU)
        self._seen: dict[str, int] = {config.uid: config.version for config in cache.configs()}
        # when the last poll that succeeded began (at first: when the cache's preload read)
        self._covered_from: datetime = cache.preloaded_at or utcnow()

    async def poll(self, started: datetime) -> int:
        """One poll begun at `started`: reloads what changed since the last one that succeeded
        began; returns how many."""
        reloaded = await self.poll_once(self._covered_from - OVERLAP)
        self._covered_from = started
        return reloaded

    async def poll_once(self, since: datetime) -> int:
        """Reloads webhooks changed since `since` whose version is new; returns how many."""
        current: dict[str, int] = {}
        async with self._database.read() as conn:
            for table in (t.webhooks, t.provider_connections):
                query = select(table.c.uid, table.c.config_version).where(
                    table.c.updated_at >= since
                )
                current.update(
                    (row.uid, int(row.config_version)) for row in await conn.execute(query)
                )
        changed = [uid for uid, version in current.items() if self._seen.get(uid) != version]
        for uid in changed:
            await self._cache.reload(uid)
        self._seen = current  # only the recent window is remembered
        return len(changed)

    async def run(self) -> None:
        while True:
            try:
                reloaded = await self.poll(utcnow())
                if reloaded:
                    log.debug("ingress config cache: %d webhooks changed elsewhere", reloaded)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store may be back in a moment
                log.warning("ingress change poller: %s", exc)
            await pause(POLL_S)
