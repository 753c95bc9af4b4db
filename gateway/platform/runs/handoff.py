"""What a run hands over between executions, and the public shared-session lookups.

Handoff snapshot attachments: the files (FILE artifacts) a run's runner uploaded up to the
latest execution that ended; none before any execution ended. Shared-session redirects map a
session id to its conversation and a conversation to its newest run's session.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.platform.runs.records import TERMINAL, newest_root_run
from gateway.store import tables as t

a, e, r = t.run_artifacts, t.run_events, t.runs


async def handoff_files(conn: AsyncConnection, run_id: str) -> list[Row[Any]]:
    """The run's files as of its latest ended execution, oldest first; [] when none ended."""
    ended = (
        select(e.c.at)
        .where(e.c.run_id == run_id, e.c.state.in_(sorted(TERMINAL)))
        .order_by(e.c.at.desc())
        .limit(1)
    )
    last_end = (await conn.execute(ended)).scalar()
    if last_end is None:
        return []
    query = (
        select(a)
        .where(a.c.run_id == run_id, a.c.artifact_type == "FILE", a.c.created_at <= last_end)
        .order_by(a.c.created_at, a.c.artifact_uid)
    )
    return list((await conn.execute(query)).all())


async def conversation_of_session(conn: AsyncConnection, session_id: str) -> str | None:
    query = select(r.c.conversation_id).where(r.c.session_id == session_id).limit(1)
    found: str | None = (await conn.execute(query)).scalar()
    return found


async def session_of_conversation(conn: AsyncConnection, conversation_id: str) -> str | None:
    run = await newest_root_run(conn, conversation_id)
    return None if run is None else run.session_id
