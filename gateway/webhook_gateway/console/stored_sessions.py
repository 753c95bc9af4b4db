"""Console logins kept on the server: a row per session, keyed by the hash of the random id its
cookie carries. A session lives until it expires or its user logs out, whichever comes first."""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.security import hash_token


async def open_session(conn: AsyncConnection, lifetime_s: int) -> str:
    """A new session's id (for the cookie); expired sessions are swept on the way."""
    session_id = secrets.token_urlsafe(32)
    now = utcnow()
    s = t.console_sessions
    await conn.execute(delete(s).where(s.c.expires_at <= now))
    await conn.execute(
        insert(s).values(
            id_hash=hash_token(session_id), expires_at=now + timedelta(seconds=lifetime_s)
        )
    )
    return session_id


async def is_live(conn: AsyncConnection, session_id: str) -> bool:
    s = t.console_sessions
    query = select(s.c.id_hash).where(
        s.c.id_hash == hash_token(session_id), s.c.expires_at > utcnow()
    )
    return (await conn.execute(query)).first() is not None


async def end_session(conn: AsyncConnection, session_id: str) -> None:
    s = t.console_sessions
    await conn.execute(delete(s).where(s.c.id_hash == hash_token(session_id)))
