"""Redis key names of every gateway key (limits, de-duplication, streams, config versions)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gateway.foundation.backends.contract import SHARDS


class KeySpace:
    """Key names. `{prefix:sN}` is the hash tag: one Cluster slot and one Stream per shard.

    The backlog counter (entries waiting for the evaluator) is one key for all shards on a single
    Redis, so that GATEWAY_MAX_BACKLOG is exact. On Redis Cluster a script may only touch keys of
    one slot, so each shard counts its own entries (`per_shard_backlog`) against an equal share
    of the limit (see `backlog_limit`)."""

    def __init__(self, prefix: str, *, per_shard_backlog: bool = False) -> None:
        self.prefix = prefix
        self.per_shard_backlog = per_shard_backlog

    def tag(self, shard: int) -> str:
        return f"{{{self.prefix}:s{shard}}}"

    def stream(self, shard: int) -> str:
        return f"{self.tag(shard)}:stream"

    def streams(self) -> list[str]:
        return [self.stream(shard) for shard in range(SHARDS)]

    def backlog(self, shard: int) -> str:
        """The counter of entries waiting in `shard`'s stream (and, on a single Redis, in all)."""
        if self.per_shard_backlog:
            return f"{self.tag(shard)}:backlog"
        return f"{{{self.prefix}}}:backlog"

    def backlog_limit(self, max_backlog: int) -> int:
        """The limit one backlog counter is held to: a shard's share on Cluster (rounded up)."""
        return -(-max_backlog // SHARDS) if self.per_shard_backlog else max_backlog

    def backlog_counters(self) -> list[tuple[str, list[str]]]:
        """Each backlog counter with the streams whose entries it counts."""
        if self.per_shard_backlog:
            return [(self.backlog(shard), [self.stream(shard)]) for shard in range(SHARDS)]
        return [(self.backlog(0), self.streams())]

    def pending(self, uid: str, shard: int) -> str:
        """The webhook's accepted deliveries not evaluated yet: delivery id -> stream entry id."""
        return f"{self.tag(shard)}:pend:{uid}"

    def refused(self, shard: int) -> str:
        """The shard's counts of refusals not logged as records (past the reject-log cap, or
        with the backlog full): `uid reason` -> count, and its first and last time."""
        return f"{self.tag(shard)}:refused"

    def version(self, uid: str, shard: int) -> str:
        return f"{self.tag(shard)}:ver:{uid}"

    def webhook(self, uid: str, shard: int) -> WebhookKeys:
        tag = self.tag(shard)
        return WebhookKeys(
            version=f"{tag}:ver:{uid}",
            # rolling windows (lists; `win:` so keys of the earlier sorted-set layout never
            # meet a list command, they expire within a minute)
            auth_prefix=f"{tag}:win:af:{uid}:",
            rate=f"{tag}:win:rate:{uid}",
            rejects=f"{tag}:win:rej:{uid}",
            seen_prefix=f"{tag}:seen:{uid}:",
            body_prefix=f"{tag}:body:",
            stream=f"{tag}:stream",
            refused=self.refused(shard),
            backlog=self.backlog(shard),
            pending=self.pending(uid, shard),
        )


@dataclass(frozen=True, slots=True)
class WebhookKeys:
    version: str
    auth_prefix: str
    rate: str
    rejects: str
    seen_prefix: str
    body_prefix: str
    stream: str
    refused: str  # the shard's counts of refusals not logged as records
    backlog: str
    pending: str

    def seen(self, identity: str) -> str:
        # hashed: identities are sender-controlled and may be long
        return self.seen_prefix + digest(identity)


def digest(identity: str) -> str:
    return hashlib.sha256(identity.encode()).hexdigest()[:32]
