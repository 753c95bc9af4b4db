"""Reading the factory inbox and marking notifications read or unread (spec 4.3).

`mine`: the caller's own notifications, with their read state; user credentials only. `team`:
every active notification of the authorized factories that still has a live recipient (a member
of the factory's team), without read state (it is each recipient's own); user or agent
credentials. Both are restricted to the active team when X-Service-Team-Uid is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import Forbidden, InvalidRequest
from gateway.platform.inbox.models import MarkError, MutationOutcome, Notification, Scope

n, rc, f, tm, r = t.inbox_notifications, t.inbox_recipients, t.factories, t.team_members, t.runs


@dataclass(frozen=True, slots=True)
class InboxQuery:
    scope: Scope = "mine"
    factory_uid: str | None = None
    recipient_uid: str | None = None
    limit: int = 50
    after: tuple[datetime, str] | None = None  # keyset position (created_at, uid), newest first


async def list_notifications(
    conn: AsyncConnection, principal: Principal, query: InboxQuery
) -> tuple[list[Notification], bool]:
    """A page of active notifications, newest first; returns (page, has_more)."""
    if query.scope == "mine" and principal.kind != "user":
        raise InvalidRequest("scope: `mine` needs user credentials; agents use scope=team")
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    columns = [*n.c, f.c.team_uid]
    statement = (
        select(*columns)
        .join(f, f.c.uid == n.c.factory_uid)
        .outerjoin(r, r.c.run_id == n.c.run_id)
        .where(f.c.team_uid.in_(sorted(teams)), _active())
    )
    if query.factory_uid is not None:
        statement = statement.where(n.c.factory_uid == query.factory_uid)
    if query.scope == "mine":
        if query.recipient_uid not in (None, principal.uid):
            return [], False  # in `mine`, a recipient filter can only match the caller
        statement = statement.add_columns(rc.c.read_at).join(
            rc, and_(rc.c.notification_uid == n.c.uid, rc.c.user_uid == principal.uid)
        )
    else:
        statement = statement.where(_live_recipient(query.recipient_uid))
    if query.after is not None:
        moment, uid = query.after
        statement = statement.where(
            or_(n.c.created_at < moment, and_(n.c.created_at == moment, n.c.uid < uid))
        )
    statement = statement.order_by(n.c.created_at.desc(), n.c.uid.desc()).limit(query.limit + 1)
    rows = (await conn.execute(statement)).all()
    page = [Notification.from_row(row, query.scope) for row in rows[: query.limit]]
    return page, len(rows) > query.limit


def _active() -> ColumnElement[bool]:
    """Not resolved, and a notice about a run only while the run is still in that state."""
    still = or_(
        n.c.run_id.is_(None),
        and_(n.c.kind == "run_failed", r.c.state == "FAILED"),
        and_(n.c.kind == "run_needs_input", r.c.state == "BLOCKED"),
        n.c.kind == "reply_failed",  # until a later reply of the run fails (or the run does)
    )
    return and_(n.c.resolved_at.is_(None), still)


def _live_recipient(recipient_uid: str | None) -> ColumnElement[bool]:
    """A recipient that is still a member of the factory's team (and is `recipient_uid`)."""
    member = exists().where(tm.c.team_uid == f.c.team_uid, tm.c.user_uid == rc.c.user_uid)
    conditions = [rc.c.notification_uid == n.c.uid, member]
    if recipient_uid is not None:
        conditions.append(rc.c.user_uid == recipient_uid)
    return exists().where(*conditions)


async def mark(
    conn: AsyncConnection, principal: Principal, uids: Sequence[str], *, read: bool
) -> list[MutationOutcome]:
    """One outcome per uid, in request order. A missing notification is a successful no-op;
    one of a factory the caller cannot access, not addressed to the caller, or no longer active
    is unsuccessful, and nothing changes for it."""
    require_user(principal)
    query = (
        select(n.c.uid, _active().label("active"), f.c.team_uid, rc.c.user_uid)
        .join(f, f.c.uid == n.c.factory_uid)
        .outerjoin(r, r.c.run_id == n.c.run_id)
        .outerjoin(rc, and_(rc.c.notification_uid == n.c.uid, rc.c.user_uid == principal.uid))
        .where(n.c.uid.in_(sorted(set(uids))))
    )
    found = {row.uid: row for row in (await conn.execute(query)).all()}
    errors = {uid: _refusal(found.get(uid), principal) for uid in uids}
    changing = sorted(uid for uid, error in errors.items() if error is None and uid in found)
    if changing:
        await conn.execute(
            update(rc)
            .where(rc.c.notification_uid.in_(changing), rc.c.user_uid == principal.uid)
            .values(read_at=utcnow() if read else None)
        )
    return [MutationOutcome(uid, errors[uid] is None, errors[uid]) for uid in uids]


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: read state is a user's; agent credentials cannot mark")


def _refusal(row: Row[Any] | None, principal: Principal) -> MarkError | None:
    """Why the notification of `row` may not be marked; None when it may (or is missing)."""
    if row is None:
        return None
    if row.team_uid not in principal.team_uids:
        return "forbidden"
    if row.user_uid is None:
        return "not_recipient"
    if not row.active:
        return "not_active"
    return None
