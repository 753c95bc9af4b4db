"""The outbound queue in the store: `enqueue` writes a message in the caller's transaction (so a
change and the message that reports it commit together or not at all); the dispatcher claims
due messages with a lease, and settles each attempt (dispatcher.py)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Literal

from msgspec import Struct
from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import after_commit
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids

m, a = t.outbound_messages, t.outbound_attempts
State = Literal["pending", "delivered", "failed"]
MAX_ERROR = 1000
MAX_EXCERPT = 1024

# what enqueue wakes once its transaction committed: the dispatchers of this process
_listeners: weakref.WeakSet[Any] = weakref.WeakSet()


class OutboundMessage(Struct, frozen=True, kw_only=True):
    """One outbound message as a sender gets it."""

    id: str
    kind: str
    key: str
    subject: str | None
    destination: str
    payload: dict[str, Any]
    attempts: int  # made before this one
    created_at: datetime


def listen(listener: Any) -> None:
    """`listener.wake()` is called whenever a transaction that enqueued a message commits."""
    _listeners.add(listener)


async def _wake() -> None:
    for listener in list(_listeners):
        listener.wake()


async def enqueue(
    conn: AsyncConnection,
    *,
    kind: str,
    key: str,
    destination: str,
    payload: dict[str, Any],
    subject: str | None = None,
    not_before: datetime | None = None,
    held: bool = False,
) -> str | None:
    """A message to send, written in the caller's transaction: its id, or None when a message
    with `key` exists already (enqueueing the same key again does nothing). `not_before`: not
    sent before then; `held`: not sent until `release`d."""
    now = utcnow()
    uid = ids.new_id("obm")
    insert_ = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    values = {
        "id": uid,
        "kind": kind,
        "key": key,
        "subject": subject,
        "destination": destination,
        "payload": payload,
        "state": "pending",
        "attempts": 0,
        "next_attempt_at": None if held else (not_before or now),
        "created_at": now,
        "updated_at": now,
    }
    made = await conn.execute(
        insert_(m).values(**values).on_conflict_do_nothing(index_elements=["key"])
    )
    if not made.rowcount:
        return None
    if not held:
        _after_commit(conn)
    return uid


async def release(
    conn: AsyncConnection, message_id: str, payload: dict[str, Any] | None = None
) -> bool:
    """A held message becomes due now (with `payload`, when given); False if it was not held."""
    values: dict[str, Any] = {"next_attempt_at": utcnow(), "updated_at": utcnow()}
    if payload is not None:
        values["payload"] = payload
    done = await conn.execute(
        update(m)
        .where(m.c.id == message_id, m.c.state == "pending", m.c.next_attempt_at.is_(None))
        .values(**values)
    )
    if done.rowcount:
        _after_commit(conn)
    return bool(done.rowcount)


def _after_commit(conn: AsyncConnection) -> None:
    # outside a Database.transaction (a migration, a script) nobody is woken: dispatchers poll
    with contextlib.suppress(RuntimeError):
        after_commit(conn, _wake)


async def claim(
    conn: AsyncConnection,
    kinds: Iterable[str],
    lease: timedelta,
    limit: int,
    admit: Callable[[str, str], bool],
) -> list[OutboundMessage]:
    """Due messages of `kinds`, at most `limit`, each one `admit(kind, destination)` takes
    (called once per message, in order, until `limit` are taken: it counts), leased for
    `lease` (rows others are claiming are skipped on PostgreSQL). The window of due rows is
    read without payloads; only the chosen ones' come back, from the UPDATE that leases them."""
    now = utcnow()
    due = (
        select(m.c.id, m.c.kind, m.c.destination)
        .where(
            m.c.state == "pending",
            m.c.next_attempt_at <= now,
            (m.c.claimed_until.is_(None)) | (m.c.claimed_until < now),
            m.c.kind.in_(list(kinds)),
        )
        .order_by(m.c.next_attempt_at, m.c.id)
        .limit(limit * 4)
        .with_for_update(skip_locked=True)
    )
    chosen: list[str] = []
    for uid, kind, destination in await conn.execute(due):
        if admit(kind, destination):
            chosen.append(uid)
            if len(chosen) == limit:
                break
    if not chosen:
        return []
    leased = (
        update(m).where(m.c.id.in_(chosen)).values(claimed_until=now + lease).returning(*_CLAIMED)
    )
    rows = {row.id: row for row in await conn.execute(leased)}
    return [
        OutboundMessage(
            id=row.id,
            kind=row.kind,
            key=row.key,
            subject=row.subject,
            destination=row.destination,
            payload=row.payload,
            attempts=row.attempts,
            created_at=row.created_at,
        )
        for row in (rows[uid] for uid in chosen)
    ]


_CLAIMED = (
    *(m.c.id, m.c.kind, m.c.key, m.c.subject, m.c.destination),
    *(m.c.payload, m.c.attempts, m.c.created_at),
)


async def record_attempt(
    conn: AsyncConnection,
    message: OutboundMessage,
    at: datetime,
    latency_ms: int,
    status: int | None,
    error: str | None,
) -> None:
    await conn.execute(
        insert(a).values(
            message_id=message.id,
            n=message.attempts + 1,
            at=at,
            status=status,
            latency_ms=latency_ms,
            response_excerpt=None if error is None else error[:MAX_EXCERPT],
            error=None if error is None else error[:MAX_ERROR],
        )
    )


async def settle(
    conn: AsyncConnection,
    message: OutboundMessage,
    state: State,
    *,
    next_attempt_at: datetime | None,
    error: str | None,
    status: int | None,
    result: dict[str, Any] | None = None,
) -> bool:
    """The attempt's outcome on the message: False when another attempt settled it first (a
    second dispatcher took it after this one's lease ran out), and this one changes nothing."""
    values: dict[str, Any] = {
        "state": state,
        "attempts": message.attempts + 1,
        "next_attempt_at": next_attempt_at,
        "claimed_until": None,
        "last_status": status,
        "updated_at": utcnow(),
    }
    if error is not None or state == "delivered":
        values["last_error"] = None if error is None else error[:MAX_ERROR]
    if result is not None:
        values["result"] = result
    done = await conn.execute(
        update(m)
        .where(m.c.id == message.id, m.c.state == "pending", m.c.attempts == message.attempts)
        .values(**values)
    )
    return bool(done.rowcount)


class Settlement(Struct, frozen=True, kw_only=True):
    """One attempt's outcome, to settle on its message (`settle_many`)."""

    message: OutboundMessage
    state: State
    at: datetime
    latency_ms: int
    next_attempt_at: datetime | None
    error: str | None
    status: int | None
    result: dict[str, Any] | None = None


async def settle_many(conn: AsyncConnection, settlements: list[Settlement]) -> list[Settlement]:
    """Many attempts' outcomes in the caller's transaction, in a few statements whatever their
    number: the messages updated by one executemany, their attempt rows inserted by another.
    Returns the settlements applied; one whose message another attempt settled first (a second
    dispatcher took it after this one's lease ran out) changes nothing and is left out."""
    if not settlements:
        return []
    # the rows are locked (PostgreSQL; SQLite has one writer) from this read to the commit
    current: dict[str, int] = {}
    ids_ = [item.message.id for item in settlements]
    for start in range(0, len(ids_), 1000):
        query = (
            select(m.c.id, m.c.attempts)
            .where(m.c.id.in_(ids_[start : start + 1000]), m.c.state == "pending")
            .with_for_update()
        )
        current.update((row.id, row.attempts) for row in await conn.execute(query))
    applied = [
        item for item in settlements if current.get(item.message.id) == item.message.attempts
    ]
    if not applied:
        return []
    now = utcnow()
    plain: list[dict[str, Any]] = []
    with_result: list[dict[str, Any]] = []
    for item in applied:
        values = {
            "b_id": item.message.id,
            "b_state": item.state,
            "b_attempts": item.message.attempts + 1,
            "b_next": item.next_attempt_at,
            "b_status": item.status,
            "b_error": None if item.error is None else item.error[:MAX_ERROR],
            "b_updated": now,
        }
        if item.result is None:
            plain.append(values)
        else:
            with_result.append({**values, "b_result": item.result})
    for rows, extra in (
        (plain, {}),
        (with_result, {"result": bindparam("b_result", type_=m.c.result.type)}),
    ):
        if rows:
            await conn.execute(_SETTLE.values(**extra), rows)
    await conn.execute(
        insert(a),
        [
            {
                "message_id": item.message.id,
                "n": item.message.attempts + 1,
                "at": item.at,
                "status": item.status,
                "latency_ms": item.latency_ms,
                "response_excerpt": None if item.error is None else item.error[:MAX_EXCERPT],
                "error": None if item.error is None else item.error[:MAX_ERROR],
            }
            for item in applied
        ],
    )
    return applied


# every attempt's outcome sets last_error: an error, or None once delivered (a retry's error
# is never None)
_SETTLE = (
    update(m)
    .where(m.c.id == bindparam("b_id"), m.c.state == "pending")
    .values(
        state=bindparam("b_state"),
        attempts=bindparam("b_attempts"),
        next_attempt_at=bindparam("b_next", type_=m.c.next_attempt_at.type),
        claimed_until=None,
        last_status=bindparam("b_status"),
        last_error=bindparam("b_error"),
        updated_at=bindparam("b_updated", type_=m.c.updated_at.type),
    )
)


async def backlog(conn: AsyncConnection) -> int:
    """Messages not delivered nor failed yet, held ones included."""
    query = select(func.count()).select_from(m).where(m.c.state == "pending")
    return int((await conn.execute(query)).scalar_one())


async def waiting(conn: AsyncConnection, kinds: Iterable[str]) -> int:
    """Pending messages of `kinds` that are not held."""
    query = (
        select(func.count())
        .select_from(m)
        .where(m.c.state == "pending", m.c.next_attempt_at.is_not(None), m.c.kind.in_(list(kinds)))
    )
    return int((await conn.execute(query)).scalar_one())


MESSAGES = BulkInsert(
    m,
    (
        *("id", "kind", "key", "subject", "destination", "payload", "state", "attempts"),
        *("next_attempt_at", "created_at", "updated_at"),
    ),
)


async def enqueue_many(conn: AsyncConnection, messages: list[dict[str, Any]]) -> None:
    """Many new messages in one executemany, in the caller's transaction: each a mapping of
    `kind`, `key`, `destination`, `payload` and `subject`, its `key` new (made by the caller,
    never reused: unlike `enqueue`, a key taken already is an error, not a no-op)."""
    if not messages:
        return
    now = utcnow()
    rows = [
        {
            **message,
            "id": ids.new_id("obm"),
            "state": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        }
        for message in messages
    ]
    await MESSAGES.insert(conn, rows)
    _after_commit(conn)
