"""Config changes reach every process: the new version goes to Redis, where every hot-path script
compares it with the version the process holds (STALE -> reload from SQL)."""

from __future__ import annotations

from gateway.foundation.backends.config_changes import LocalConfigPublisher
from gateway.foundation.backends.contract import shard_of
from gateway.foundation.backends.lua_scripts import PUBLISH_VERSION_SCRIPT
from gateway.foundation.backends.redis_clients import AnyRedis
from gateway.foundation.backends.redis_keys import KeySpace


class RedisConfigPublisher:
    def __init__(self, redis: AnyRedis, keyspace: KeySpace, local: LocalConfigPublisher) -> None:
        self._script = redis.register_script(PUBLISH_VERSION_SCRIPT)
        self._keyspace = keyspace
        self.local = local  # this process's own cache learns of it at once, too

    async def webhook_changed(self, webhook_uid: str, version: int) -> None:
        key = self._keyspace.version(webhook_uid, shard_of(webhook_uid))
        await self._script(keys=[key], args=[version])
        await self.local.webhook_changed(webhook_uid, version)
