"""Delivering events to subscriptions: the outbound sender of kind `event` (docs/events.md).

Each message is one event for one subscription, its body fixed when it was enqueued. Every
attempt is signed afresh (Standard Webhooks, with the `standardwebhooks` library): `webhook-id`
is the message's id, the same on every attempt, so a subscriber drops a repeat; the timestamp
is the attempt's; during a rotation the previous secret signs beside the new one. A 2xx within
TIMEOUT_S is delivered; 410 Gone disables the subscription; anything else is tried again on
SCHEDULE, and a message that runs out of it has failed. A subscription whose messages have
failed for `event_subscription_disable_after_days` with none delivered is disabled, and its
owners told (`on_disabled`, the inbox: wiring fills it in).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from standardwebhooks import Webhook

from gateway.foundation.events.fan_out import KIND
from gateway.foundation.outbound import (
    Delivered,
    Failed,
    OutboundMessage,
    Outcome,
    RetryLater,
    RetrySchedule,
)
from gateway.foundation.outbound.http import RefusedDestination, refused
from gateway.foundation.outbound.keepalive import Answer, KeepAliveClient
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.security import SecretBox

s = t.event_subscriptions
TIMEOUT_S = 15.0
# attempt 2 about 5 s after the first, then x4 each time (20 s, 80 s, ~5 min, ~21 min, ~1.4 h,
# ~5.7 h), then every 6 h, +-20 %; the message fails a day after its event
SCHEDULE = RetrySchedule(
    first_s=5.0, factor=4.0, max_delay_s=6 * 3600.0, max_attempts=12, max_age_s=86_400.0
)
EXCERPT = 1024
# messages in flight to one subscription at once (the dispatcher's default is 4): a subscriber
# answering quickly takes thousands a second; a slow one holds 16 of the dispatcher's slots
PER_SUBSCRIPTION = 16
ROW_TTL_S = 2.0
# (conn, subscription row, why): tells the subscription's owners it was disabled
OnDisabled = Callable[[AsyncConnection, Row[Any], str], Awaitable[None]]


# the uids of subscriptions this transaction cleared `failing_since` of already (conn.info)
_CLEARED = "event_subscriptions_cleared"


def signature(secrets: list[str | Webhook], msg_id: str, at: datetime, body: str) -> str:
    """The `webhook-signature` header: one `v1,<base64>` per secret, space-separated."""
    return " ".join(_signer(secret).sign(msg_id, at, body) for secret in secrets)


def _signer(secret: str | Webhook) -> Webhook:
    return secret if isinstance(secret, Webhook) else Webhook(secret)


def headers(secrets: list[str | Webhook], msg_id: str, at: datetime, body: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature(secrets, msg_id, at, body),
    }


class EventSender:
    """The outbound `Sender` of kind `event`."""

    kind = KIND
    schedule = SCHEDULE
    per_destination = PER_SUBSCRIPTION

    def __init__(
        self,
        database: Database,
        box: SecretBox,
        http: KeepAliveClient,
        *,
        disable_after: timedelta,
        on_disabled: OnDisabled,
    ) -> None:
        self._database, self._box, self._http = database, box, http
        self._disable_after, self._on_disabled = disable_after, on_disabled
        self._rows: dict[str, tuple[float, Row[Any] | None]] = {}
        self._reading: dict[str, asyncio.Future[Row[Any] | None]] = {}
        # decrypted and decoded once per secret, not once per message
        self._signers: dict[str, Webhook] = {}

    async def _subscription(self, uid: str) -> Row[Any] | None:
        """The subscription's row, read at most once per ROW_TTL_S (thousands of messages a
        second go to a few subscriptions; a change reaches the sender within that time). The
        sends that find it stale together wait for one read."""
        now = time.monotonic()
        cached = self._rows.get(uid)
        if cached is not None and cached[0] > now:
            return cached[1]
        reading = self._reading.get(uid)
        if reading is None:
            reading = self._reading[uid] = asyncio.ensure_future(self._read(uid))
            reading.add_done_callback(lambda _: self._reading.pop(uid, None))
        return await asyncio.shield(reading)

    async def _read(self, uid: str) -> Row[Any] | None:
        async with self._database.read() as conn:
            row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
        if len(self._rows) > 10_000:
            self._rows.clear()
        self._rows[uid] = (time.monotonic() + ROW_TTL_S, row)
        return row

    async def send(self, message: OutboundMessage) -> Outcome:
        row = await self._subscription(message.payload["subscription_uid"])
        if row is None or row.deleted_at is not None:
            return Failed(error="the subscription was deleted", gone=True)
        if not row.enabled:
            return Failed(error="the subscription is disabled")
        now = utcnow()
        body: str = message.payload["body"]
        try:
            answer = await self._http.post(
                row.url,
                content=body.encode(),
                headers=headers(self._secrets(row, now), message.id, now, body),
                timeout=TIMEOUT_S,
                keep=EXCERPT,
            )
        except RefusedDestination as exc:
            return refused(exc)
        except httpx.TimeoutException:
            return RetryLater(error=f"no answer within {TIMEOUT_S:g} s")
        except httpx.HTTPError as exc:
            return RetryLater(error=f"{type(exc).__name__}: {exc}")
        if answer.is_success:
            return Delivered(message_id=str(answer.status_code))
        excerpt = answer.text[:EXCERPT]
        if answer.status_code == 410:
            return Failed(error=f"410 Gone: {excerpt}", gone=True, status=410)
        return RetryLater(
            error=f"{answer.status_code}: {excerpt}",
            status=answer.status_code,
            after=_retry_after(answer),
        )

    def _secrets(self, row: Row[Any], now: datetime) -> list[str | Webhook]:
        secrets: list[str | Webhook] = [self._signer(row.secret_encrypted)]
        until = row.previous_secret_until
        if row.previous_secret_encrypted and until is not None and until > now:
            secrets.append(self._signer(row.previous_secret_encrypted))
        return secrets

    def _signer(self, encrypted: str) -> Webhook:
        signer = self._signers.get(encrypted)
        if signer is None:
            if len(self._signers) > 10_000:
                self._signers.clear()
            signer = self._signers[encrypted] = Webhook(self._box.decrypt(encrypted))
        return signer

    async def settled(
        self, conn: AsyncConnection, message: OutboundMessage, outcome: Outcome
    ) -> None:
        uid = message.payload["subscription_uid"]
        cleared: set[str] = conn.info.setdefault(_CLEARED, set())
        if isinstance(outcome, Delivered):
            # one conditional UPDATE, nothing read, once per subscription in a transaction
            # that settles many messages: most deliveries find nothing to clear
            if uid not in cleared:
                await conn.execute(
                    update(s)
                    .where(s.c.uid == uid, s.c.failing_since.is_not(None))
                    .values(failing_since=None)
                )
                cleared.add(uid)
            return
        cleared.discard(uid)
        row = (await conn.execute(select(s).where(s.c.uid == uid))).first()
        if row is None or row.deleted_at is not None or not row.enabled:
            return
        now = utcnow()
        if isinstance(outcome, Failed) and outcome.status == 410:
            await self._disable(conn, row, "the endpoint answered 410 Gone")
            return
        since = row.failing_since or message.created_at
        if now - since >= self._disable_after:
            days = self._disable_after / timedelta(days=1)
            await self._disable(conn, row, f"its messages failed for {days:g} days")
        elif row.failing_since is None:
            await conn.execute(update(s).where(s.c.uid == uid).values(failing_since=since))

    async def _disable(self, conn: AsyncConnection, row: Row[Any], why: str) -> None:
        await conn.execute(
            update(s)
            .where(s.c.uid == row.uid)
            .values(enabled=False, disabled_reason=why, updated_at=utcnow())
        )
        await self._on_disabled(conn, row, why)


def _retry_after(answer: Answer) -> float | None:
    value = answer.headers.get("retry-after", "")
    return min(float(value), SCHEDULE.max_delay_s) if value.isdigit() else None
