"""Reads of what runs said (spec 4.9): a run's or a conversation's messages in one normalized
shape, and the run an external reference (a ticket or pull-request URL) belongs to.

A normalized message: `role` (user for prompts and follow-ups; for what the runner reported, the
role it gave: agent, user, tool, system), `kind` prompt (the run's own), follow_up (a user's, with
its routing and mode) or message (the runner's), the text, and when. A
conversation's messages are those of its runs, oldest run first, each run's in time order.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.platform.runs.conversations.models import (
    FOLLOW_UPS,
    Action,
    Conversation,
    Message,
    RunConversation,
)
from gateway.platform.runs.record.models import RunRecord
from gateway.platform.runs.record.store import can_view, visible_run

# what users sent: the follow-ups a runner gets, and those to a failed run in its debug window
USER_ROUTINGS = (*FOLLOW_UPS, "debug")
r, m = t.runs, t.run_messages


async def run_conversation(
    conn: AsyncConnection, principal: Principal, run_id: str
) -> RunConversation:
    """The normalized messages of a run the caller can see."""
    run = await visible_run(conn, principal, run_id)
    messages = await run_messages(conn, [run])
    return RunConversation(
        run_id=run.run_id, conversation_id=run.conversation_id, messages=messages
    )


async def conversation(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> Conversation:
    """The normalized messages of the conversation's runs the caller can see."""
    runs = await conversation_runs(conn, principal, conversation_id)
    return Conversation(
        conversation_id=conversation_id,
        run_ids=[run.run_id for run in runs],
        messages=await run_messages(conn, runs),
    )


async def run_messages(conn: AsyncConnection, runs: list[RunRecord]) -> list[Message]:
    """The normalized messages of `runs` (in the given order)."""
    found: dict[str, list[Message]] = {run.run_id: [_prompt(run)] for run in runs}
    query = (
        select(m)
        .where(m.c.run_id.in_(list(found)), m.c.routing != "interrupt")
        .order_by(m.c.created_at, m.c.id)
    )
    for row in await conn.execute(query):
        found[row.run_id].append(_message(row))
    return [message for run in runs for message in found[run.run_id]]


def _message(row: Any) -> Message:
    """A follow-up a user sent, or what the runner reported (said, or an action taken)."""
    from_user = row.routing in USER_ROUTINGS
    message = Message(
        id=row.id,
        run_id=row.run_id,
        # a runner's message: the role it reported (agent, user, tool, system), kept in `mode`
        role="user" if from_user else (row.mode or "agent"),
        kind="follow_up" if from_user else "message",
        text=row.message,
        mode=row.mode if from_user else None,
        routing=row.routing if from_user else None,
        attachments=(row.attachments or []) if from_user else [],
        created_at=row.created_at,
    )
    if row.action is not None:  # a skill load (spec 2.3), as the runner reported it
        message.kind = "action"
        message.action = msgspec.convert(row.action, Action)
    return message


def _prompt(run: RunRecord) -> Message:
    return Message(
        id=f"prompt:{run.run_id}",
        run_id=run.run_id,
        role="user",
        kind="prompt",
        text=run.prompt,
        mode=run.mode,
        routing=None,
        attachments=[],
        created_at=run.created_at,
    )


async def conversation_runs(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> list[RunRecord]:
    """The conversation's runs the caller can see, oldest first; 404 when none."""
    query = (
        select(r).where(r.c.conversation_id == conversation_id).order_by(r.c.created_at, r.c.run_id)
    )
    runs = [RunRecord.from_row(row) for row in await conn.execute(query)]
    visible = [run for run in runs if can_view(principal, run)]
    if not visible:
        raise NotFound(f"conversation_id: {conversation_id} not found")
    return visible


async def run_by_reference(conn: AsyncConnection, principal: Principal, url: str) -> RunRecord:
    """The newest run the caller can see whose ticket is `url`, or that produced the pull
    request at `url`; 404 when none."""
    if not url.startswith(("https://", "http://")):
        raise InvalidRequest("url: an http(s) URL")
    pr = select(t.pull_requests.c.run_id).where(t.pull_requests.c.url == url)
    query = (
        select(r)
        .where(or_(r.c.ticket_url == url, r.c.run_id.in_(pr)))
        .order_by(r.c.created_at.desc(), r.c.run_id.desc())
    )
    for row in await conn.execute(query):
        run = RunRecord.from_row(row)
        if can_view(principal, run):
            return run
    raise NotFound("url: no run of yours references it")
