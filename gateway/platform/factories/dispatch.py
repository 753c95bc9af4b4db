"""Dispatching work to a factory (POST /factory/{uid}/runs): a run for the factory's foreman,
inserted with `task_pending = true`; the factory task bound to its conversation comes
asynchronously after the commit (gateway/platform/tasks/binding.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory
from gateway.foundation.accounts.identities import Principal
from gateway.kernel.errors import InvalidRequest, NoForeman
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.record.items import run_item
from gateway.platform.runs.record.models import RunItem as Run

# `PROJ-123`, `owner/repo#123`, or any other reference of these characters
TICKET_REF = re.compile(r"[A-Za-z0-9_.#/-]{1,200}")
MAX_PROMPT = 100_000


@dataclass(frozen=True, slots=True)
class DispatchRequest:
    prompt: str
    title: str | None = None
    ticket_ref: str | None = None
    ticket_url: str | None = None


def parse_ticket_url(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) > 2000:
        raise InvalidRequest("ticket_url: expected an http or https URL (at most 2000 characters)")
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise InvalidRequest("ticket_url: expected an http or https URL") from exc
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in value):
        raise InvalidRequest("ticket_url: expected an http or https URL")
    return value


async def dispatch_run(
    conn: AsyncConnection, factory: Factory, request: DispatchRequest, *, creator: Principal
) -> Run:
    """The run for the factory's foreman (409 no_foreman without one); its task comes later."""
    if factory.foreman_agent_uid is None:
        raise NoForeman(f"factory: {factory.uid} has no foreman agent to receive work")
    new = NewRun(
        prompt=request.prompt,
        title=request.title,
        team_uid=factory.team_uid,
        factory_uid=factory.uid,
        creator=creator,
        ticket_ref=request.ticket_ref,
        ticket_url=request.ticket_url,
        task_pending=True,
        agent_uid=factory.foreman_agent_uid,
    )
    return await run_item(conn, await insert_run(conn, new))
