"""The Redis backend's counts of refusals it logs no record of: the scripts count them in one
hash per shard (lua_scripts.py, `tally`); an evaluator takes each shard's at once (so two
evaluators never report one count twice) and gives them back if it could not record them."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from gateway.foundation.backends.contract import SHARDS, RefusalCount, shard_of
from gateway.foundation.backends.lua_scripts import GIVE_BACK_REFUSALS_SCRIPT, TAKE_REFUSALS_SCRIPT
from gateway.foundation.backends.redis_clients import AnyRedis
from gateway.foundation.backends.redis_keys import KeySpace


class RedisRefusals:
    def __init__(self, redis: AnyRedis, keyspace: KeySpace) -> None:
        self.keyspace = keyspace
        self._take = redis.register_script(TAKE_REFUSALS_SCRIPT)
        self._give_back = redis.register_script(GIVE_BACK_REFUSALS_SCRIPT)

    async def take(self) -> list[RefusalCount]:
        counts: list[RefusalCount] = []
        for shard in range(SHARDS):  # one slot a call (Redis Cluster)
            flat: list[Any] = await self._take(keys=[self.keyspace.refused(shard)])
            counts += _counts(dict(zip(flat[::2], flat[1::2], strict=True)))
        return counts

    async def give_back(self, counts: list[RefusalCount]) -> None:
        by_shard: dict[int, list[Any]] = defaultdict(list)
        for c in counts:
            by_shard[shard_of(c.source_uid)] += [
                f"{c.source_uid} {c.reason}",
                c.count,
                int(c.first_at.timestamp() * 1000),
                int(c.last_at.timestamp() * 1000),
            ]
        for shard, args in by_shard.items():
            await self._give_back(keys=[self.keyspace.refused(shard)], args=args)


def _counts(fields: dict[bytes, bytes]) -> list[RefusalCount]:
    found = []
    for field, value in fields.items():
        name = field.decode()
        if name.endswith((" <", " >")):
            continue
        source, _, reason = name.partition(" ")
        first = int(fields.get(field + b" <", b"0"))
        last = int(fields.get(field + b" >", b"0"))
        found.append(RefusalCount(source, reason, int(value), _when(first), _when(last)))
    return found


def _when(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)
