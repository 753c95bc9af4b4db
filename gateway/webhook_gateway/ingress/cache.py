"""The in-process cache of webhook configs: preloaded at start, refreshed on change. Provider
connections are cached beside webhooks, by their uids (`ids.is_connection` tells them apart).

A miss (a webhook created by another process, or a random uid) goes to SQL once; absent and
disabled webhooks are remembered for NEGATIVE_TTL seconds, and at most MISS_CONCURRENCY lookups
run at a time, so a flood of random uids cannot hammer the database.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime

from gateway.foundation.store import Database
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.security import SecretBox
from gateway.webhook_gateway.ingress import connection_config, webhook_config
from gateway.webhook_gateway.ingress.webhook_config import WebhookConfig

log = logging.getLogger("gateway.ingress")

NEGATIVE_TTL = 1.0
MISS_CONCURRENCY = 4
MAX_NEGATIVE = 10_000
MAX_UID = 64


class ConfigCache:
    def __init__(self, database: Database, box: SecretBox) -> None:
        self._database = database
        self._box = box
        self._live: dict[str, WebhookConfig] = {}  # enabled webhooks
        self._negative: dict[str, tuple[float, WebhookConfig | None]] = {}  # absent or disabled
        self._misses = asyncio.Semaphore(MISS_CONCURRENCY)
        # when the last preload began reading: what changed after it may not be in the cache
        self.preloaded_at: datetime | None = None

    async def preload(self) -> int:
        self.preloaded_at = utcnow()
        async with self._database.read() as conn:
            configs = await webhook_config.load_all(conn, self._box)
            connections = await connection_config.load_all(conn, self._box)
        for config in (*configs, *connections):
            self._store(config.uid, config)
        log.info(
            "ingress config cache: %d webhooks and %d provider connections preloaded",
            len(configs),
            len(connections),
        )
        return len(configs) + len(connections)

    def configs(self) -> list[WebhookConfig]:
        """Every cached enabled webhook's (and provider connection's) config."""
        return list(self._live.values())

    def live(self, uid: str) -> WebhookConfig | None:
        """The enabled webhook's config when cached: the request path's lookup, no await."""
        return self._live.get(uid)

    async def get(self, uid: str) -> WebhookConfig | None:
        """The enabled webhook's config, or None (unknown, disabled or deleted)."""
        config = self._live.get(uid)
        if config is not None:
            return config
        negative = self._negative.get(uid)
        if negative is not None and negative[0] > time.monotonic():
            return None
        if len(uid) > MAX_UID or not uid.replace("_", "").replace("-", "").isalnum():
            return None
        async with self._misses:
            return await self.reload(uid)

    async def reload(self, uid: str) -> WebhookConfig | None:
        source = connection_config if ids.is_connection(uid) else webhook_config
        async with self._database.read() as conn:
            config = await source.load_one(conn, self._box, uid)
        self._store(uid, config)
        return config if config is not None and config.enabled else None

    async def webhook_changed(self, uid: str, version: int) -> None:
        """Listener of the config publisher: take the change in before the next request."""
        await self.reload(uid)

    def _store(self, uid: str, config: WebhookConfig | None) -> None:
        if config is not None and config.enabled:
            current = self._live.get(uid)
            if current is not None and current.version > config.version:
                return  # a concurrent reload already brought a newer version
            self._negative.pop(uid, None)
            self._live[uid] = config
            return
        self._live.pop(uid, None)
        if len(self._negative) >= MAX_NEGATIVE:
            self._negative.clear()
        self._negative[uid] = (time.monotonic() + NEGATIVE_TTL, config)
