"""What the console's run pages read: the runs a key may see, filtered as the runs list asks
(factory, automation, state, since when), one run with its transcript tail, follow-ups and
replies, and where the delivery that started it is shown. Read-only; cancelling is the runs'
own rule."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.agent_console.reply_reads import ReplyView, reply_views
from gateway.platform.runs.conversations.models import Message
from gateway.platform.runs.conversations.reads import run_messages
from gateway.platform.runs.record.models import RunRecord
from gateway.platform.runs.record.states import RUN_STATES, TERMINAL
from gateway.platform.runs.record.store import visible_run
from gateway.webhook_gateway.console.session import PATH

r = t.runs
SINCE = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}
LIST_LIMIT = 100
TAIL = 20  # transcript messages a run page shows


@dataclass(frozen=True, slots=True)
class RunFilter:
    factory_uid: str = ""
    automation_uid: str = ""
    state: str = ""
    since: str = ""  # a key of SINCE, or "" for any time

    @classmethod
    def of(cls, query: dict[str, str]) -> RunFilter:
        """The filter a runs list's query string asks for; unknown values are ignored."""
        state = query.get("state", "")
        since = query.get("since", "")
        return cls(
            factory_uid=query.get("factory", "")[:64],
            automation_uid=query.get("automation", "")[:64],
            state=state if state in RUN_STATES else "",
            since=since if since in SINCE else "",
        )


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as its page shows it."""

    run: RunRecord
    duration_s: float | None
    ended: bool
    final: bool  # ended, and its replies settled: the page has nothing more to show
    transcript: list[Message]
    follow_ups: list[Message]
    delivery_href: str
    replies: list[ReplyView]


def duration_s(run: RunRecord, now: datetime) -> float | None:
    """From its start to its end (its last update, once ended), or to now while it runs."""
    if run.started_at is None:
        return None
    end = run.updated_at if run.state in TERMINAL else now
    return (end - run.started_at).total_seconds()


async def list_runs(
    conn: AsyncConnection, principal: Principal, wanted: RunFilter
) -> list[RunRecord]:
    """The newest LIST_LIMIT runs the key may see that pass `wanted`."""
    visible = or_(r.c.creator_uid == principal.uid, r.c.team_uid.in_(sorted(principal.team_uids)))
    query = select(r).where(visible)
    if wanted.factory_uid:
        query = query.where(r.c.factory_uid == wanted.factory_uid)
    if wanted.automation_uid:
        query = query.where(r.c.automation_uid == wanted.automation_uid)
    if wanted.state:
        query = query.where(r.c.state == wanted.state)
    if wanted.since:
        query = query.where(r.c.created_at >= utcnow() - SINCE[wanted.since])
    query = query.order_by(r.c.created_at.desc(), r.c.run_id.desc()).limit(LIST_LIMIT)
    return [RunRecord.from_row(row) for row in await conn.execute(query)]


async def run_view(conn: AsyncConnection, principal: Principal, run_id: str) -> RunView:
    """One run the key may see (404 otherwise), with the tail of its transcript."""
    run = await visible_run(conn, principal, run_id)
    messages = await run_messages(conn, [run])
    href = await delivery_href(conn, run.delivery_id) if run.delivery_id else ""
    replies = await reply_views(conn, run.run_id)
    ended = run.state in TERMINAL
    return RunView(
        run=run,
        duration_s=duration_s(run, utcnow()),
        ended=ended,
        final=ended and all(reply.settled for reply in replies),
        transcript=messages[-TAIL:],
        follow_ups=[m for m in messages if m.kind == "follow_up"],
        delivery_href=href,
        replies=replies,
    )


async def delivery_href(conn: AsyncConnection, delivery_id: str) -> str:
    """The console page of a delivery: its webhook's, else its provider connection's."""
    d, w = t.deliveries, t.webhooks
    query = (
        select(d.c.webhook_uid, w.c.factory_uid)
        .select_from(d.outerjoin(w, w.c.uid == d.c.webhook_uid))
        .where(d.c.delivery_id == delivery_id)
    )
    row = (await conn.execute(query)).first()
    if row is None:
        return ""
    if row.factory_uid is None:
        return f"{PATH}/p/{row.webhook_uid}/d/{delivery_id}"
    return f"{PATH}/f/{row.factory_uid}/w/{row.webhook_uid}/d/{delivery_id}"
