"""Reads of what runs said (spec 4.9): a run's or a conversation's messages in one normalized
shape, the run an external reference (a ticket or pull-request URL) belongs to, and the skills
a team's agents offer.

A normalized message: `role` (user for prompts and follow-ups; for what the runner reported, the
role it gave: agent, user, tool, system), `kind` prompt (the run's own), follow_up (a user's, with
its routing and mode) or message (the runner's), the text, and when. A
conversation's messages are those of its runs, oldest run first, each run's in time order.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.accounts.identities import Principal
from gateway.errors import InvalidRequest, NotFound
from gateway.platform.runners.execution import FOLLOW_UPS
from gateway.platform.runs.records import can_view
from gateway.platform.runs.skill_specs import parse_skill_spec
from gateway.store import tables as t

# what users sent: the follow-ups a runner gets, and those to a failed run in its debug window
USER_ROUTINGS = (*FOLLOW_UPS, "debug")
r, m = t.runs, t.run_messages


async def run_messages(conn: AsyncConnection, runs: list[Row[Any]]) -> list[dict[str, Any]]:
    """The normalized messages of `runs` (in the given order)."""
    found: dict[str, list[dict[str, Any]]] = {row.run_id: [_prompt(row)] for row in runs}
    query = (
        select(m)
        .where(m.c.run_id.in_(list(found)), m.c.routing != "interrupt")
        .order_by(m.c.created_at, m.c.id)
    )
    for row in await conn.execute(query):
        found[row.run_id].append(_message(row))
    return [message for run in runs for message in found[run.run_id]]


def _prompt(run: Row[Any]) -> dict[str, Any]:
    return {
        "id": f"prompt:{run.run_id}",
        "run_id": run.run_id,
        "role": "user",
        "kind": "prompt",
        "text": run.prompt,
        "mode": run.mode,
        "routing": None,
        "attachments": [],
        "created_at": run.created_at,
    }


def _message(row: Row[Any]) -> dict[str, Any]:
    from_user = row.routing in USER_ROUTINGS
    return {
        "id": row.id,
        "run_id": row.run_id,
        # a runner's message: the role it reported (agent, user, tool, system), kept in `mode`
        "role": "user" if from_user else (row.mode or "agent"),
        "kind": "follow_up" if from_user else "message",
        "text": row.message,
        "mode": row.mode if from_user else None,
        "routing": row.routing if from_user else None,
        "attachments": (row.attachments or []) if from_user else [],
        "created_at": row.created_at,
    }


async def conversation_runs(
    conn: AsyncConnection, principal: Principal, conversation_id: str
) -> list[Row[Any]]:
    """The conversation's runs the caller can see, oldest first; 404 when none."""
    query = (
        select(r).where(r.c.conversation_id == conversation_id).order_by(r.c.created_at, r.c.run_id)
    )
    runs = [row for row in await conn.execute(query) if can_view(principal, row)]
    if not runs:
        raise NotFound(f"conversation_id: {conversation_id} not found")
    return runs


async def run_by_reference(conn: AsyncConnection, principal: Principal, url: str) -> Row[Any]:
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
        if can_view(principal, row):
            return row
    raise NotFound("url: no run of yours references it")


async def team_skills(conn: AsyncConnection, principal: Principal) -> list[dict[str, Any]]:
    """The distinct skills the agents of the caller's teams offer, by spec."""
    a = t.agents
    query = select(a.c.uid, a.c.run_defaults).where(a.c.team_uid.in_(sorted(principal.team_uids)))
    found: dict[str, dict[str, Any]] = {}
    for uid, defaults in await conn.execute(query):
        for spec in (defaults or {}).get("skills") or []:
            entry = found.get(spec)
            if entry is None:
                parsed = parse_skill_spec(spec, "skills")
                entry = found[spec] = {
                    "skill_spec": spec,
                    "name": parsed.name,
                    "repository": f"{parsed.owner}/{parsed.repo}",
                    "agent_uids": [],
                }
            entry["agent_uids"].append(uid)
    return [found[spec] for spec in sorted(found)]
