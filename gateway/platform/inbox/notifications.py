"""Factory inbox notifications, produced by the events they report and in the same transaction:
a factory run that ends FAILED or needs input (BLOCKED), a task that changes stage, a dispatch
that could not start. Recipients are the factory team's members at that moment; each has their
own read state. A notification stays active until what it reports is over (docs/inbox.md): a
notice about a run while the run is still FAILED or BLOCKED, the others until `resolved_at`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import ColumnElement, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.platform.inbox.models import Kind

n, rc = t.inbox_notifications, t.inbox_recipients
RUN_KINDS: dict[str, Kind] = {"FAILED": "run_failed", "BLOCKED": "run_needs_input"}
MAX_DETAIL = 2000


async def notify(
    conn: AsyncConnection,
    factory_uid: str,
    kind: Kind,
    title: str,
    *,
    detail: str | None = None,
    run_id: str | None = None,
    task_uid: str | None = None,
    at: datetime | None = None,
) -> str | None:
    """A notification for the members of the factory's team; None when it has none."""
    members = (
        select(t.team_members.c.user_uid)
        .join(t.factories, t.factories.c.team_uid == t.team_members.c.team_uid)
        .where(t.factories.c.uid == factory_uid)
    )
    recipients = sorted((await conn.execute(members)).scalars())
    if not recipients:
        return None
    uid = ids.new_id("ntf")
    await conn.execute(
        insert(n).values(
            uid=uid,
            factory_uid=factory_uid,
            kind=kind,
            title=title[:500],
            detail=None if detail is None else detail[:MAX_DETAIL],
            run_id=run_id,
            task_uid=task_uid,
            created_at=at or utcnow(),
        )
    )
    await conn.execute(insert(rc), [{"notification_uid": uid, "user_uid": u} for u in recipients])
    return uid


async def resolve(conn: AsyncConnection, *conditions: ColumnElement[bool]) -> None:
    """Resolves the active notifications matching `conditions`."""
    await conn.execute(
        update(n).where(n.c.resolved_at.is_(None), *conditions).values(resolved_at=utcnow())
    )


async def on_run_states(
    conn: AsyncConnection, run_ids: Iterable[str], state: str, at: datetime, reason: str | None
) -> None:
    """Called for every run state change (run_timeline.record). Only FAILED and BLOCKED cost a
    statement: a notice about a run is over once the run has left that state, which readers
    check against the run itself (inbox_reading), so the run's other changes write nothing."""
    kind = RUN_KINDS.get(state)
    if kind is None:
        return
    r = t.runs
    query = select(r.c.run_id, r.c.factory_uid, r.c.title, r.c.prompt, r.c.status_message).where(
        r.c.run_id.in_(list(run_ids)), r.c.factory_uid.is_not(None)
    )
    for run in (await conn.execute(query)).all():
        # the run's earlier notices are over: a new failure or question replaces them
        await resolve(conn, n.c.run_id == run.run_id)
        name = run.title or run.prompt[:80]
        title = f"Run failed: {name}" if kind == "run_failed" else f"Run needs input: {name}"
        message = reason or (run.status_message or {}).get("message")
        await notify(conn, run.factory_uid, kind, title, detail=message, run_id=run.run_id, at=at)


async def on_stage_change(
    conn: AsyncConnection,
    *,
    factory_uid: str,
    task_uid: str,
    title: str,
    before: str,
    after: str,
    at: datetime | None = None,
) -> None:
    """A task moved from stage `before` to `after`; the previous stage notice is over."""
    await resolve(conn, n.c.task_uid == task_uid, n.c.kind == "task_stage_changed")
    await notify(
        conn,
        factory_uid,
        "task_stage_changed",
        f"Task {title!r} moved to {after}",
        detail=f"from {before} to {after}",
        task_uid=task_uid,
        at=at,
    )


async def on_task_deleted(conn: AsyncConnection, task_uid: str) -> None:
    await resolve(conn, n.c.task_uid == task_uid)


async def on_dispatch_failed(conn: AsyncConnection, factory_uid: str, detail: str) -> None:
    """Work for the factory could not start (no foreman). One active notice per factory: a
    burst of deliveries is one problem, and a foreman being set resolves it.

    The evaluator decided "no foreman" when it planned the batch, before this transaction: a
    foreman set in between has resolved the notices already, and a new one would stay active
    with a foreman in place. So the factory's row is locked and read again here (set_foreman
    updates it, so the two take turns on PostgreSQL; SQLite writers take turns anyway), and no
    notice is made once it has a foreman: the delivery's trace still says why it started
    nothing."""
    factory = (
        select(t.factories.c.foreman_agent_uid)
        .where(t.factories.c.uid == factory_uid)
        .with_for_update(key_share=True)
    )
    if (await conn.execute(factory)).scalar_one_or_none() is not None:
        return
    active = select(n.c.uid).where(
        n.c.factory_uid == factory_uid, n.c.kind == "dispatch_failed", n.c.resolved_at.is_(None)
    )
    if (await conn.execute(active.limit(1))).first() is not None:
        return
    await notify(
        conn, factory_uid, "dispatch_failed", "Work could not start: no foreman", detail=detail
    )


async def on_foreman_set(conn: AsyncConnection, factory_uid: str) -> None:
    await resolve(conn, n.c.factory_uid == factory_uid, n.c.kind == "dispatch_failed")


async def on_subscription_disabled(
    conn: AsyncConnection, team_uid: str, factory_uid: str | None, title: str, detail: str
) -> None:
    """An event subscription was disabled by the service (410 Gone, failing too long): told in
    the inbox of its factory, or of every factory of its team when it has none (the inbox is
    where the team looks)."""
    if factory_uid is not None:
        factories = [factory_uid]
    else:
        query = select(t.factories.c.uid).where(t.factories.c.team_uid == team_uid)
        factories = sorted((await conn.execute(query)).scalars())
    for uid in factories:
        await notify(conn, uid, "subscription_disabled", title, detail=detail)
