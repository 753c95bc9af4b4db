"""Replay: a stored accepted delivery sent again, as a new delivery, through the ingress backend.

One replay for every source: a custom webhook's delivery or a provider connection's (GitHub,
Slack, Linear, Jira, GitLab). The copy, with the request headers stored with the original (a
provider's event names are there), goes through the backend's normal durable path
(`IngressBackend.submit`: the Redis stream, or the embedded backend's outbox), so the evaluator
handles it exactly like a live delivery, against the automations as they are now, and exactly
once. It takes a slot of the source's delivery rate like any delivery (429 past 60 a minute),
and a source that is disabled or deleted takes no replay: checked here, and again by the
backend's config-version check.

The link to the original (`replay_of`) and the caller's Idempotency-Key live in
`delivery_replays`, written before the submission: a retry with the same key finds the first
replay and sends nothing. A replay the backend refused keeps its link but frees its key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.backends.contract import (
    REPLAY_IDENTITY,
    Label,
    Outcome,
    Submission,
    Target,
    Verdict,
    shard_of,
)
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import BacklogFull, Conflict, NotFound, RateLimited, Unavailable
from gateway.webhook_gateway.connections.management import visible_row
from gateway.webhook_gateway.webhooks.management import get_webhook_row

if TYPE_CHECKING:
    from gateway.foundation.backends.contract import IngressBackend
    from gateway.foundation.backends.pending_deliveries import PendingDeliveries
    from gateway.foundation.store import Database

MAX_KEY_CHARS = 200


class WebhookDisabled(Conflict):
    code, title = "webhook_disabled", "Webhook is disabled"


class ConnectionDisabled(Conflict):
    code, title = "connection_disabled", "Provider connection is disabled"


class NotReplayable(Conflict):
    code, title = "not_replayable", "Only accepted deliveries can be replayed"


class KeyReused(Conflict):
    code, title = "idempotency_key_reused", "Idempotency-Key already used for another delivery"


@dataclass(frozen=True, slots=True)
class Replayed:
    delivery_id: str
    replay_of: str
    created: bool  # False: an earlier request with the same Idempotency-Key made it


@dataclass(frozen=True, slots=True)
class Original:
    delivery_id: str
    payload: bytes
    received_at: datetime
    headers: bytes | None = None  # the stored request header block


# the backend target of the source a replay goes to, read (and access checked) through `conn`:
# `webhook_source` or `connection_source`
Source = Callable[[AsyncConnection], Awaitable[Target]]


def webhook_source(factory_uid: str, webhook_uid: str) -> Source:
    return partial(live_target, factory_uid=factory_uid, webhook_uid=webhook_uid)


def connection_source(principal: Principal, connection_uid: str) -> Source:
    async def target(conn: AsyncConnection) -> Target:
        return _target_of(await visible_row(conn, principal, connection_uid))

    return target


class Replayer:
    """Replays deliveries of one process's store through its ingress backend."""

    def __init__(
        self, database: Database, backend: IngressBackend, pending: PendingDeliveries
    ) -> None:
        self.database = database
        self.backend = backend
        self.pending = pending

    async def replay(
        self,
        source: Source,
        delivery_id: str,
        idempotency_key: str | None,
        requested_by: str | None,
    ) -> Replayed:
        async with self.database.read() as conn:
            target = await source(conn)
            uid = target.webhook_uid
            earlier = await _by_key(conn, uid, idempotency_key)
            if earlier is not None:
                return _earlier(earlier, delivery_id)
            original = await self.original(conn, uid, delivery_id)
        return await self.send(target, original, idempotency_key, requested_by)

    async def original(self, conn: AsyncConnection, source_uid: str, delivery_id: str) -> Original:
        """The stored payload and headers of an accepted delivery of this source."""
        d = t.deliveries
        query = select(d.c.label, d.c.payload, d.c.received_at, d.c.headers).where(
            d.c.webhook_uid == source_uid, d.c.delivery_id == delivery_id
        )
        row = (await conn.execute(query)).first()
        if row is None:  # accepted, maybe still on its way to the log (Redis)
            record = await self.pending.find(source_uid, delivery_id)
            if record is None:
                raise NotFound(f"delivery: {delivery_id} not found for this {_noun(source_uid)}")
            label, payload, received = record.label.value, record.payload, record.received_at
            headers = record.headers
        else:
            label, payload, received = row.label, row.payload, row.received_at
            headers = row.headers
        if label != Label.ACCEPTED.value or payload is None:
            raise NotReplayable(f"delivery: {delivery_id} is {label!r}; it has no payload")
        return Original(delivery_id, payload, received, headers)

    async def send(
        self,
        target: Target,
        original: Original,
        idempotency_key: str | None,
        requested_by: str | None,
    ) -> Replayed:
        """Records the link, then submits the copy; the backend's refusal is raised."""
        new_id = ids.new_id("dlv")
        try:
            async with self.database.transaction() as conn:
                await conn.execute(
                    t.delivery_replays.insert().values(
                        delivery_id=new_id,
                        webhook_uid=target.webhook_uid,
                        replay_of=original.delivery_id,
                        idempotency_key=idempotency_key,
                        requested_by=requested_by,
                        created_at=utcnow(),
                    )
                )
        except IntegrityError:  # the same key, concurrently: the other request made it
            async with self.database.read() as conn:
                earlier = await _by_key(conn, target.webhook_uid, idempotency_key)
            if earlier is None:
                raise
            return _earlier(earlier, original.delivery_id)
        try:
            outcome = await self._submit(target, new_id, original)
            _raise_refusal(outcome, target.webhook_uid)
        except Exception:
            await self._free_key(new_id)
            raise
        return Replayed(new_id, original.delivery_id, created=True)

    async def _submit(self, target: Target, new_id: str, original: Original) -> Outcome:
        headers = original.headers or b""
        identity = REPLAY_IDENTITY + new_id
        submission = Submission(target, new_id, identity, original.payload, True, headers)
        outcome = await self.backend.submit(submission)
        if outcome.verdict is not Verdict.STALE:
            return outcome
        # the source changed since it was read: read it again (disabled or deleted now?)
        async with self.database.read() as conn:
            row = await _source_by_uid(conn, target.webhook_uid)
            fresh = _target_of(row)
        return await self.backend.submit(submission._replace(target=fresh))

    async def _free_key(self, new_id: str) -> None:
        r = t.delivery_replays
        async with self.database.transaction() as conn:
            await conn.execute(
                update(r).where(r.c.delivery_id == new_id).values(idempotency_key=None)
            )


async def live_target(conn: AsyncConnection, factory_uid: str, webhook_uid: str) -> Target:
    """The backend target of an enabled webhook of this factory; 404 deleted, 409 disabled."""
    return _target_of(await get_webhook_row(conn, factory_uid, webhook_uid))


async def _source_by_uid(conn: AsyncConnection, uid: str) -> Any:
    table = t.provider_connections if ids.is_connection(uid) else t.webhooks
    query = select(table).where(table.c.uid == uid, table.c.deleted_at.is_(None))
    row = (await conn.execute(query)).first()
    if row is None:
        where = "this team" if ids.is_connection(uid) else "this factory"
        raise NotFound(f"{_noun(uid)}: {uid} not found in {where}")
    return row


def _noun(uid: str) -> str:
    return "connection" if ids.is_connection(uid) else "webhook"


def _target_of(row: Any) -> Target:
    if not row.enabled:
        refused = ConnectionDisabled if ids.is_connection(row.uid) else WebhookDisabled
        raise refused(f"{_noun(row.uid)}: {row.uid} is disabled; enable it to replay deliveries")
    return Target(row.uid, int(row.config_version), shard_of(row.uid))


async def _by_key(conn: AsyncConnection, webhook_uid: str, key: str | None) -> Any:
    if key is None:
        return None
    r = t.delivery_replays
    query = select(r.c.delivery_id, r.c.replay_of).where(
        r.c.webhook_uid == webhook_uid, r.c.idempotency_key == key
    )
    return (await conn.execute(query)).first()


def _earlier(row: Any, delivery_id: str) -> Replayed:
    if row.replay_of != delivery_id:
        raise KeyReused(
            f"Idempotency-Key: already used to replay delivery {row.replay_of}, not {delivery_id}"
        )
    return Replayed(row.delivery_id, row.replay_of, created=False)


def _raise_refusal(outcome: Outcome, source_uid: str) -> None:
    verdict = outcome.verdict
    if verdict is Verdict.ACCEPTED:
        return
    noun = _noun(source_uid)
    if verdict is Verdict.RATE_LIMITED:
        raise RateLimited(
            f"replay: the {noun} took 60 deliveries in the last 60 seconds",
            retry_after=outcome.retry_after_s,
        )
    if verdict is Verdict.BACKLOG_FULL:
        raise BacklogFull("replay: too many deliveries wait for evaluation; retry later")
    if verdict is Verdict.STALE:
        raise Unavailable(f"replay: the {noun}'s configuration is changing; retry")
    raise Unavailable(f"replay: refused by the delivery backend ({verdict.name})")
