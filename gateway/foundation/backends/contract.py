"""The ingress backend interface: limits, de-duplication and the durable delivery log.

Two implementations: `redis.py` (Lua scripts, any number of processes) and `memory.py`
(embedded, one process, SQL outbox). The endpoint and the consumer only see these types.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

from gateway.kernel.rejections import Reason

SHARDS = 16  # one Redis Stream per shard; the consumer reads 16 streams, not one per webhook
DEDUP_WINDOW_S = 7 * 24 * 3600
RATE_LIMIT = 60  # authenticated deliveries per rolling window per webhook
RATE_WINDOW_MS = 60_000
REJECT_LOG_LIMIT = 60  # rejected/duplicate records logged per rolling window per webhook


class Label(enum.StrEnum):
    """Delivery-log labels (docs/ingress.md, "Delivery log")."""

    ACCEPTED = "Accepted"
    DUPLICATE = "Duplicate"
    AUTH = "Rejected (auth)"
    INVALID_JSON = "Rejected (invalid JSON)"
    TOO_LARGE = "Rejected (too large)"
    RATE_LIMITED = "Rejected (rate limited)"


class Verdict(enum.Enum):
    ACCEPTED = "OK"
    DUPLICATE = "DUP"
    INVALID_JSON = "BADJSON"  # authenticated, counted, logged; answer 400
    RATE_LIMITED = "RATE"
    AUTH_LIMITED = "AUTHLIMIT"  # failed-auth budget of this webhook and source spent
    AUTH_REJECTED = "DENIED"  # failure counted; answer 401
    STALE = "STALE"  # the process's config version is older than the shared one
    BACKLOG_FULL = "FULL"  # too many deliveries wait for the evaluator: refused, nothing recorded


# Outcome and Submission are made once per request: NamedTuples, since a frozen dataclass costs
# ~1.5 µs to construct (one object.__setattr__ per field) against ~0.3 µs for a tuple.
class Outcome(NamedTuple):
    verdict: Verdict
    delivery_id: str | None = None  # accepted: the new id; duplicate: the FIRST delivery's id
    retry_after_ms: int = 0

    @property
    def retry_after_s(self) -> int:
        """Whole seconds to the next free slot, rounded up, at least 1 (docs/api.md)."""
        return max(1, -(-self.retry_after_ms // 1000))


def shard_of(webhook_uid: str) -> int:
    return zlib.crc32(webhook_uid.encode()) % SHARDS


@dataclass(frozen=True, slots=True)
class Target:
    """What a backend needs to know about the webhook a request addresses."""

    webhook_uid: str
    version: int
    shard: int


# the identity of a replayed delivery starts with it (deliveries/replay.py): the evaluator starts
# a replay's runs even where the delivery would continue a work item (it is asked to run again)
REPLAY_IDENTITY = "replay:"


class Submission(NamedTuple):
    """An authenticated delivery: accepted, duplicate, or (payload not JSON) rejected. Its source
    address plays no part: the failed-auth budget never refuses a delivery that authenticates."""

    target: Target
    delivery_id: str  # fresh id, used when the delivery is new
    identity: str
    body: bytes
    valid_json: bool
    headers: bytes = b""  # the request headers, credentials redacted (an HTTP header block)


class DeliveryRecord(NamedTuple):
    """One delivery-log entry as it travels from ingress to the consumer (a NamedTuple: made
    per delivery, and a frozen dataclass's construction costs ~4x a tuple's)."""

    delivery_id: str
    webhook_uid: str
    received_at: datetime
    size: int
    label: Label
    identity: str | None = None
    duplicate_of: str | None = None
    payload: bytes | None = None
    reason: Reason | None = None  # rejected ones: why (never sent to the sender)
    headers: bytes | None = None  # accepted ones: request headers, redacted (header block)


@dataclass(frozen=True, slots=True)
class RefusalCount:
    """Refusals of one source for one reason that no log record tells (past the reject-log
    cap, or with the backlog full): how many, the first and the last."""

    source_uid: str
    reason: str
    count: int
    first_at: datetime
    last_at: datetime


class Refusals(Protocol):
    """Where a backend counts the refusals it logs no record of
    (gateway/webhook_gateway/deliveries/refusal_flusher.py turns them into events)."""

    async def take(self) -> list[RefusalCount]:
        """Every count so far, reset: each is taken once."""
        ...

    async def give_back(self, counts: list[RefusalCount]) -> None:
        """Counts taken but not recorded: added back."""
        ...


class IngressBackend(Protocol):
    def prepare(self, targets: Iterable[Target]) -> None:
        """Build whatever per-webhook state the request path needs, at start-up: made before
        the serving process freezes its start-up objects, it stays out of garbage collections
        (built lazily instead, 10,000 webhooks' worth fed full collections of ~30 ms)."""
        ...

    async def submit(self, submission: Submission) -> Outcome:
        """Rate, de-duplication and the durable append, all or nothing."""
        ...

    async def auth_failed(
        self, target: Target, source: str, delivery_id: str, size: int, reason: Reason
    ) -> Outcome:
        """Count a failed authentication (`reason`: why it failed): AUTH_LIMITED, AUTH_REJECTED
        or STALE."""
        ...

    async def log_rejection(
        self, target: Target, delivery_id: str, size: int, label: Label, reason: Reason
    ) -> None:
        """Record a rejection decided before authentication (too large); capped per webhook."""
        ...

    async def close(self) -> None: ...
