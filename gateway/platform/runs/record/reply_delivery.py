"""The `reply` kind's sender of the outbound dispatcher, on the platform's side: the text of a
run's reply is made when it is sent, from the run as it is then (its title, state, status
message and pull requests: what a runner reported after the change that enqueued the reply is
in it), and posted or edited through the connection's reply sender
(gateway/webhook_gateway/connections/reply_sender.py). When a reply is settled: one that posted (the
start, or an end with no message to edit) releases the edits that waited for its message; a reply
that failed for good tells the factory's owners in the inbox.

The newest end wins. A run continued by a follow-up ends again, and edits the same message;
two ends close together may reach the dispatcher in any order (a retry after a 429 waits while
the next end goes out). An end's reply renders the run's newest end, never its own if a newer
one exists; an end that is no longer the newest, with the message to leave as it is, is not
sent at all; and an edit that an end overtook while it was on its way is made again with the
newer end, so the message's last edit always shows the newest outcome."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, NamedTuple

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.events.catalogue import ReplyFailedData
from gateway.foundation.events.log import record_event
from gateway.foundation.outbound import Delivered, Failed, OutboundMessage, Outcome, RetrySchedule
from gateway.foundation.store import Database
from gateway.foundation.store import tables as t
from gateway.platform.inbox import notifications as inbox
from gateway.platform.runs.record.states import TERMINAL
from gateway.webhook_gateway.connections.reply_outbox import KIND, ended_change, release_edits
from gateway.webhook_gateway.connections.reply_sender import ReplyMessage, ReplySender, run_page
from gateway.webhook_gateway.replies import Artifact, ReplyContext, ReplyTarget

log = logging.getLogger("gateway.replies")
r, e = t.runs, t.run_events
# edits made again for ends that overtook the one on its way (more is a run ending in a loop)
MAX_CATCH_UPS = 3
# a reply is worth trying for a few hours (a provider's outage), not for days: by then the run's
# outcome is old news, and its owners hear that it failed
SCHEDULE = RetrySchedule(
    first_s=10.0, factor=2.0, max_delay_s=600.0, max_attempts=12, max_age_s=6 * 3600.0
)


class RunReplySender:
    kind = KIND

    def __init__(
        self,
        database: Database,
        replies: ReplySender,
        public_url: str,
        schedule: RetrySchedule = SCHEDULE,
    ) -> None:
        self._database, self._replies, self._public_url = database, replies, public_url
        self.schedule = schedule

    async def send(self, message: OutboundMessage) -> Outcome:
        payload = message.payload
        try:
            target = msgspec.convert(payload["target"], ReplyTarget)
        except (KeyError, msgspec.ValidationError) as exc:
            return Failed(error=f"reply target: {exc}")
        ended = payload.get("phase") == "ended"
        own_end = ended_change(message.key) if ended else None
        async with self._database.read() as conn:
            newest = await newest_end(conn, message.subject or "") if ended else None
            if newest is not None and newest.id != own_end:
                if isinstance(payload.get("message_id"), str):
                    # stale: the newer end edits this message (after this one, or has already)
                    return Delivered(message_id=payload["message_id"])
                payload = payload | newest.fields()
            context = await reply_context(conn, payload, self._public_url)
        if context is None:
            return Failed(error=f"run {payload.get('run_id')} no longer exists", gone=True)
        outcome = await self._send(payload, target, context, payload.get("message_id"))
        rendered = newest.id if newest is not None else own_end
        for _ in range(MAX_CATCH_UPS if ended else 0):
            if not isinstance(outcome, Delivered):
                break
            async with self._database.read() as conn:
                newest = await newest_end(conn, message.subject or "")
                if newest is None or newest.id == rendered:
                    break
                payload, rendered = payload | newest.fields(), newest.id
                context = await reply_context(conn, payload, self._public_url)
            if context is None:
                break
            outcome = await self._send(payload, target, context, outcome.message_id)
        return outcome

    async def _send(
        self,
        payload: dict[str, Any],
        target: ReplyTarget,
        context: ReplyContext,
        message_id: str | None,
    ) -> Outcome:
        return await self._replies.send(
            ReplyMessage(
                connection_uid=payload["connection_uid"],
                target=target,
                context=context,
                message_id=message_id,
            )
        )

    async def settled(
        self, conn: AsyncConnection, message: OutboundMessage, outcome: Outcome
    ) -> None:
        payload, run_id = message.payload, message.subject or ""
        if payload.get("message_id") is None:  # it posted (or failed to): the edits it held
            posted = outcome.message_id if isinstance(outcome, Delivered) else None
            await release_edits(conn, run_id, posted)
        if isinstance(outcome, Failed):
            await _record_failed(conn, run_id, payload, outcome)
            await _tell_owners(conn, run_id, payload, outcome)
        else:  # the run's replies reach the provider again: an earlier failure notice is over
            n = t.inbox_notifications
            await inbox.resolve(conn, n.c.run_id == run_id, n.c.kind == "reply_failed")


class RunEnd(NamedTuple):
    """One ending of a run, as its timeline has it."""

    id: str
    state: str
    at: datetime
    reason: str | None

    def fields(self) -> dict[str, Any]:
        """What an end's reply payload says of it (replies.py)."""
        return {"state": self.state, "reason": self.reason, "at": self.at.isoformat()}


async def newest_end(conn: AsyncConnection, run_id: str) -> RunEnd | None:
    """The run's latest ending (None: it never ended)."""
    query = (
        select(e.c.id, e.c.state, e.c.at, e.c.reason)
        .where(e.c.run_id == run_id, e.c.state.in_(TERMINAL))
        .order_by(e.c.at.desc(), e.c.id.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else RunEnd(row.id, row.state, row.at, row.reason)


async def _record_failed(
    conn: AsyncConnection, run_id: str, payload: dict[str, Any], failed: Failed
) -> None:
    """The `reply.failed` event, for the run's team (none when the run is gone)."""
    run = (
        await conn.execute(
            select(r.c.team_uid, r.c.factory_uid, r.c.work_item_id).where(r.c.run_id == run_id)
        )
    ).first()
    if run is None:
        return
    target = payload.get("target") or {}
    data = ReplyFailedData(
        connection_uid=payload.get("connection_uid") or "",
        factory_uid=run.factory_uid,
        provider=str(target.get("provider") or ""),
        error=failed.error,
        run_id=run_id,
    )
    if run.work_item_id is not None:
        data.work_item_id = run.work_item_id
    if failed.status is not None:
        data.status = failed.status
    await record_event(
        conn, "reply.failed", team_uid=run.team_uid, data=data, factory_uid=run.factory_uid
    )


async def _tell_owners(
    conn: AsyncConnection, run_id: str, payload: dict[str, Any], failed: Failed
) -> None:
    """One active notice per run's replies: a later failure replaces the earlier one."""
    run = (
        await conn.execute(
            select(r.c.factory_uid, r.c.title, r.c.prompt).where(r.c.run_id == run_id)
        )
    ).first()
    if run is None or run.factory_uid is None:
        return
    n = t.inbox_notifications
    await inbox.resolve(conn, n.c.run_id == run_id, n.c.kind == "reply_failed")
    name = run.title or run.prompt[:80]
    where = _where(payload.get("target") or {})
    await inbox.notify(
        conn,
        run.factory_uid,
        "reply_failed",
        f"Reply failed: {name}",
        detail=f"the {payload.get('phase', '')} reply on {where} failed: {failed.error}",
        run_id=run_id,
    )


def _where(target: dict[str, Any]) -> str:
    """A target as a person reads it: octo/repo#7, C123 thread 1.2, ENG-12."""
    provider = target.get("provider")
    if provider == "github":
        return f"{target.get('repository')}#{target.get('number')}"
    if provider == "gitlab":
        mark = "!" if target.get("kind") == "merge_request" else "#"
        return f"{target.get('project')}{mark}{target.get('iid')}"
    if provider == "slack":
        return f"Slack {target.get('channel')} thread {target.get('thread_ts')}"
    if provider == "linear":
        return f"Linear {target.get('issue_id')}"
    return f"Jira {target.get('issue_key')}"


async def reply_context(
    conn: AsyncConnection, payload: dict[str, Any], public_url: str
) -> ReplyContext | None:
    """What the reply's template is given: the run as it is now, in the phase of the change
    that enqueued the reply."""
    run_id = payload.get("run_id")
    row = (await conn.execute(select(r).where(r.c.run_id == run_id))).first()
    if row is None:
        return None
    ended = payload.get("phase") == "ended"
    names = await _names(conn, row)
    status = (row.status_message or {}).get("message") if ended else None
    at = _moment(payload.get("at"))
    return ReplyContext(
        phase="ended" if ended else "started",
        run_id=row.run_id,
        run_title=row.title or row.prompt[:80],
        run_url=run_page(public_url, row.run_id),
        state=payload.get("state") or row.state,
        agent=names.get("agent") or "Agent",
        factory=names.get("factory") or "Factory",
        automation=names.get("automation"),
        event=(row.metadata or {}).get("event"),
        actor=payload.get("actor"),
        status_message=payload.get("reason") if ended and payload.get("reason") else status,
        started_at=row.started_at or row.created_at,
        ended_at=at if ended else None,
        artifacts=_artifacts(row.artifacts) if ended else (),
    )


async def _names(conn: AsyncConnection, row: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, table, uid in (
        ("agent", t.agents, row.agent_uid),
        ("factory", t.factories, row.factory_uid),
        ("automation", t.automations, row.automation_uid),
    ):
        if uid is not None:
            value = (
                await conn.execute(select(table.c.name).where(table.c.uid == uid))
            ).scalar_one_or_none()
            if value:
                found[name] = value
    return found


def _artifacts(stored: list[dict[str, Any]] | None) -> tuple[Artifact, ...]:
    made: list[Artifact] = []
    for item in stored or ():
        data = item.get("data") or {}
        if item.get("artifact_type") == "PULL_REQUEST":
            made.append(
                Artifact(
                    kind="pull_request",
                    title=data.get("title"),
                    url=data.get("url"),
                    branch=data.get("branch"),
                )
            )
        elif item.get("artifact_type") == "FILE" and data.get("filename") != "event-payload.json":
            made.append(Artifact(kind="file", title=data.get("title") or data.get("filename")))
    return tuple(made)


def _moment(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
