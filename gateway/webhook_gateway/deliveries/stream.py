"""Following a source's accepted deliveries as they are logged, for `gateway listen`: each with
its raw body and stored headers, in the log's order (received_at, delivery_id).

A delivery reaches the log when the evaluator takes it (Redis: within moments of its 202), so a
row may be logged after later ones were read: every read looks back LOOKBACK before the newest
position read, and skips the ids this follower has handed out already. A follower that
reconnects names the last delivery it received (`Last-Event-ID: <ms>.<delivery_id>`) and starts
LOOKBACK before it; `gateway listen` drops the ids it forwarded already, so nothing is lost or
repeated.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from datetime import UTC, datetime, timedelta

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import Label
from gateway.foundation.backends.delivery_rows import headers_of
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import InvalidRequest
from gateway.webhook_gateway.ingress.stored_headers import REDACTED

d = t.deliveries
LOOKBACK = timedelta(seconds=60)
PAGE = 200
REMEMBERED = 10_000  # ids one follower remembers having sent (well past a LOOKBACK's worth)


class StreamedDelivery(msgspec.Struct, kw_only=True):
    """One delivery on the stream: what the sender sent. Headers redacted in the log
    (credentials, signatures: the gateway verified them) are left out."""

    delivery_id: str
    source_uid: str
    received_at: datetime
    headers: list[tuple[str, str]]
    body_base64: str


def stream_id(received_at: datetime, delivery_id: str) -> str:
    return f"{int(received_at.timestamp() * 1000)}.{delivery_id}"


def start_of(last_event_id: str | None) -> datetime:
    """Where a follower starts: LOOKBACK before the delivery it names, else now."""
    if last_event_id is None:
        return utcnow()
    millis, dot, _ = last_event_id.partition(".")
    if not dot or not millis.isdigit():
        raise InvalidRequest("Last-Event-ID: expected <milliseconds>.<delivery id>")
    return datetime.fromtimestamp(int(millis) / 1000, UTC) - LOOKBACK


def resume_point(last_event_id: str) -> tuple[int, str]:
    """(milliseconds, delivery id) of a Last-Event-ID: the point a follower that cannot drop
    repeats itself (a smee channel) resumes after."""
    millis, dot, delivery_id = last_event_id.partition(".")
    if not dot or not millis.isdigit():
        raise InvalidRequest("Last-Event-ID: expected <milliseconds>.<delivery id>")
    return int(millis), delivery_id


class Follower:
    """One follower's position: the newest time read, and the ids handed out. With `after`
    (a resume point), nothing at or before it in the stream's order is handed out."""

    def __init__(
        self, source_uid: str, since: datetime, after: tuple[int, str] | None = None
    ) -> None:
        self.source_uid = source_uid
        self.newest = since
        self.floor = since  # never below where the follower asked to start
        self.after = after
        self.sent: OrderedDict[str, None] = OrderedDict()

    async def next_page(self, conn: AsyncConnection) -> list[StreamedDelivery]:
        since = max(self.floor, self.newest - LOOKBACK)
        query = (
            select(d.c.delivery_id, d.c.received_at, d.c.payload, d.c.headers)
            .where(
                d.c.webhook_uid == self.source_uid,
                d.c.received_at >= since,
                d.c.label == Label.ACCEPTED.value,
                d.c.payload.is_not(None),
            )
            .order_by(d.c.received_at, d.c.delivery_id)
            .limit(PAGE + len(self.sent))
        )
        found = []
        for delivery_id, received_at, payload, headers in await conn.execute(query):
            self.newest = max(self.newest, received_at)
            if delivery_id in self.sent or self._before_resume(received_at, delivery_id):
                continue
            self.sent[delivery_id] = None
            if len(self.sent) > REMEMBERED:
                self.sent.popitem(last=False)
            kept = [
                (name, value)
                for name, value in headers_of(headers or b"").items()
                if value != REDACTED.decode()
            ]
            found.append(
                StreamedDelivery(
                    delivery_id=delivery_id,
                    source_uid=self.source_uid,
                    received_at=received_at,
                    headers=kept,
                    body_base64=base64.b64encode(payload).decode(),
                )
            )
            if len(found) == PAGE:
                break
        return found

    def _before_resume(self, received_at: datetime, delivery_id: str) -> bool:
        if self.after is None:
            return False
        return (int(received_at.timestamp() * 1000), delivery_id) <= self.after
