"""What clients see of runs: `RunItem`s with their creators (users and agents), one query for a
page. Tasks, schedules and factory dispatch embed them too."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.runs.record.models import Creator, RunItem, RunRecord
from gateway.platform.runs.record.reply_status import run_replies


async def creators(
    conn: AsyncConnection, people: Collection[tuple[str | None, str | None]]
) -> dict[str, Creator]:
    """The creators of (kind, uid) principals, users and agents, keyed by uid; unknown ones are
    missing."""
    users = {uid for kind, uid in people if kind == "user"}
    agents = {uid for kind, uid in people if kind == "agent"}
    found: dict[str, Creator] = {}
    if users:
        for u in await conn.execute(select(t.users).where(t.users.c.uid.in_(users))):
            found[u.uid] = Creator(u.uid, u.email, u.display_name, "user")
    if agents:
        for a in await conn.execute(select(t.agents).where(t.agents.c.uid.in_(agents))):
            found[a.uid] = Creator(a.uid, None, a.name, "service_account")
    return found


async def run_items(conn: AsyncConnection, runs: Sequence[RunRecord]) -> list[RunItem]:
    found = await creators(conn, [(run.creator_kind, run.creator_uid) for run in runs])
    # only runs a delivery started can have replies: the others cost nothing
    replies = await run_replies(conn, [run.run_id for run in runs if run.delivery_id])
    return [
        RunItem.of(run, found.get(run.creator_uid or ""), replies.get(run.run_id)) for run in runs
    ]


async def run_item(conn: AsyncConnection, run: RunRecord) -> RunItem:
    return (await run_items(conn, [run]))[0]
