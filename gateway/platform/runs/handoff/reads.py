"""What a run hands over between executions, and the public shared-session lookups.

Handoff snapshot attachments: the files (FILE artifacts) a run's runner uploaded up to the
latest execution that ended; none before any execution ended. Shared-session redirects map a
session id to its conversation and a conversation to its newest run's session.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.handoff.models import (
    ConversationRedirect,
    HandoffAttachment,
    HandoffAttachments,
    SessionRedirect,
)
from gateway.platform.runs.record.models import known
from gateway.platform.runs.record.states import TERMINAL
from gateway.platform.runs.record.store import newest_root_run

a, e, r = t.run_artifacts, t.run_events, t.runs


async def handoff_attachments(
    conn: AsyncConnection, run_id: str, download_url: Callable[[str], str]
) -> HandoffAttachments:
    """The run's files as of its latest ended execution, oldest first, each with
    `download_url(artifact_uid)`; none when no execution ended."""
    ended = (
        select(e.c.at)
        .where(e.c.run_id == run_id, e.c.state.in_(sorted(TERMINAL)))
        .order_by(e.c.at.desc())
        .limit(1)
    )
    last_end = (await conn.execute(ended)).scalar()
    if last_end is None:
        return HandoffAttachments([])
    query = (
        select(a.c.artifact_uid, a.c.filename, a.c.mime_type)
        .where(a.c.run_id == run_id, a.c.artifact_type == "FILE", a.c.created_at <= last_end)
        .order_by(a.c.created_at, a.c.artifact_uid)
    )
    return HandoffAttachments(
        [
            HandoffAttachment(uid, download_url(uid), filename or uid, mime_type)
            for uid, filename, mime_type in await conn.execute(query)
        ]
    )


async def session_redirect(conn: AsyncConnection, session_id: str) -> SessionRedirect:
    """The conversation of a shared session; empty when there is none."""
    query = select(r.c.conversation_id).where(r.c.session_id == session_id).limit(1)
    found: str | None = (await conn.execute(query)).scalar()
    return SessionRedirect(conversation_id=known(found))


async def conversation_redirect(
    conn: AsyncConnection, conversation_id: str
) -> ConversationRedirect:
    """The shared session of a conversation's newest run; empty when there is none."""
    run = await newest_root_run(conn, conversation_id)
    return ConversationRedirect(session_id=known(None if run is None else run.session_id))
