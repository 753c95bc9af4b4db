"""A subscription's messages and their attempts, as the API shows them, and sending them
again: one, or every one that failed since a time (docs/events.md#messages-and-attempts)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row, desc, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.fan_out import KIND
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import NotFound
from gateway.kernel.types import Timestamp

m, a = t.outbound_messages, t.outbound_attempts
MessageState = Literal["pending", "delivered", "failed"]


class EventMessage(Struct, kw_only=True, omit_defaults=True):
    """One event for one subscription. `id` is the `webhook-id` of every attempt."""

    id: str
    type: str
    state: MessageState
    attempts: int
    created_at: Timestamp
    updated_at: Timestamp
    next_attempt_at: Timestamp | UnsetType = UNSET
    last_status: int | UnsetType = UNSET
    last_error: str | UnsetType = UNSET
    body: Annotated[str, Meta(description="the body as sent: {type, timestamp, data}")] = ""

    @classmethod
    def from_row(cls, row: Row[Any]) -> EventMessage:
        def known(value: Any) -> Any:
            return UNSET if value is None else value

        return cls(
            id=row.id,
            type=row.payload["type"],
            state=row.state,
            attempts=row.attempts,
            created_at=row.created_at,
            updated_at=row.updated_at,
            next_attempt_at=known(row.next_attempt_at) if row.state == "pending" else UNSET,
            last_status=known(row.last_status),
            last_error=known(row.last_error),
            body=row.payload["body"],
        )


class EventMessageList(Struct, kw_only=True):
    messages: list[EventMessage]


class MessagesQuery(Struct, kw_only=True, forbid_unknown_fields=True):
    state: MessageState | None = None
    limit: Annotated[int, Meta(ge=1, le=100)] = 50
    before: Annotated[str, Meta(description="a message id: the page after it")] | None = None


class MessageAttempt(Struct, kw_only=True, omit_defaults=True):
    n: int
    at: Timestamp
    latency_ms: int
    status: int | UnsetType = UNSET
    response_excerpt: (
        Annotated[str, Meta(description="the first 1 KB of a refusal's answer")] | UnsetType
    ) = UNSET
    error: str | UnsetType = UNSET


class MessageAttemptList(Struct, kw_only=True):
    attempts: list[MessageAttempt]


class RetryFailed(Struct, kw_only=True, forbid_unknown_fields=True):
    since: Annotated[datetime, Meta(tz=True, description="failed messages created since then")]


class Retried(Struct, kw_only=True):
    retried: int


def _of(subscription_uid: str) -> Any:
    return (m.c.kind == KIND) & (m.c.subject == subscription_uid)


async def list_messages(
    conn: AsyncConnection, subscription_uid: str, query: MessagesQuery
) -> list[EventMessage]:
    """Newest first."""
    found = select(m).where(_of(subscription_uid))
    if query.state is not None:
        found = found.where(m.c.state == query.state)
    if query.before is not None:
        found = found.where(m.c.id < query.before)
    found = found.order_by(desc(m.c.id)).limit(query.limit)
    return [EventMessage.from_row(row) for row in await conn.execute(found)]


async def get_message(conn: AsyncConnection, subscription_uid: str, message_id: str) -> Row[Any]:
    query = select(m).where(_of(subscription_uid), m.c.id == message_id)
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFound(f"message_id: no message {message_id} of subscription {subscription_uid}")
    return row


async def attempts(conn: AsyncConnection, message_id: str) -> list[MessageAttempt]:
    query = select(a).where(a.c.message_id == message_id).order_by(a.c.n)
    return [
        MessageAttempt(
            n=row.n,
            at=row.at,
            latency_ms=row.latency_ms,
            status=UNSET if row.status is None else row.status,
            response_excerpt=UNSET if row.response_excerpt is None else row.response_excerpt,
            error=UNSET if row.error is None else row.error,
        )
        for row in await conn.execute(query)
    ]


async def retry(conn: AsyncConnection, subscription_uid: str, message_id: str) -> EventMessage:
    """Sends the message again now, whatever its state (a delivered one too: the subscriber
    asked); its attempts go on counting."""
    await get_message(conn, subscription_uid, message_id)
    await _due_now(conn, m.c.id == message_id)
    return EventMessage.from_row(await get_message(conn, subscription_uid, message_id))


async def retry_failed(conn: AsyncConnection, subscription_uid: str, since: datetime) -> int:
    """Every failed message created since `since`, due again now; how many."""
    return await _due_now(
        conn, _of(subscription_uid), m.c.state == "failed", m.c.created_at >= since
    )


async def _due_now(conn: AsyncConnection, *conditions: Any) -> int:
    now = utcnow()
    done = await conn.execute(
        update(m)
        .where(*conditions)
        .values(state="pending", next_attempt_at=now, claimed_until=None, updated_at=now)
    )
    return int(done.rowcount)  # the dispatchers poll: sent within a second or so
