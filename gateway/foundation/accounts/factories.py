"""Factories: team-owned units that receive work; access follows team membership."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from msgspec import Struct
from sqlalchemy import Row, func, insert, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal, require_team
from gateway.foundation.store import tables as t
from gateway.foundation.store.rows import from_row
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.kernel.types import Timestamp


# as the rules read it and as the API answers it (GET /factory/{uid})
class Factory(Struct, frozen=True):
    uid: str
    name: str
    alias: str | None
    team_uid: str
    foreman_agent_uid: str | None
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def from_row(cls, row: Row[Any]) -> Factory:
        return from_row(cls, row)


async def create_factory(
    conn: AsyncConnection,
    team_uid: str,
    name: str,
    alias: str | None,
    foreman_agent_uid: str | None,
) -> str:
    await require_team(conn, team_uid)
    if not name.strip():
        raise InvalidRequest("name: must not be blank")
    if foreman_agent_uid is not None:
        agent = (
            await conn.execute(
                select(t.agents.c.team_uid).where(t.agents.c.uid == foreman_agent_uid)
            )
        ).first()
        if agent is None or agent.team_uid != team_uid:
            raise InvalidRequest("foreman: no agent with that uid in this team")
    uid = ids.new_id("fac")
    now = utcnow()
    await conn.execute(
        insert(t.factories).values(
            uid=uid,
            team_uid=team_uid,
            name=name,
            alias=alias,
            foreman_agent_uid=foreman_agent_uid,
            created_at=now,
            updated_at=now,
        )
    )
    return uid


async def get_accessible_factory(conn: AsyncConnection, principal: Principal, uid: str) -> Factory:
    """The factory, 404 when it does not exist, 403 when the caller's teams do not own it."""
    row = (await conn.execute(select(t.factories).where(t.factories.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"factory: {uid} not found")
    if row.team_uid not in principal.team_uids:
        raise Forbidden(f"factory: {uid} belongs to a team this credential is not in")
    return Factory.from_row(row)


async def belongs_to_team(conn: AsyncConnection, factory_uid: str, team_uid: str) -> bool:
    """Whether the factory exists and is the team's."""
    f = t.factories
    query = select(f.c.uid).where(f.c.uid == factory_uid, f.c.team_uid == team_uid)
    return (await conn.execute(query)).first() is not None


def require_manage_access(principal: Principal, factory: Factory) -> None:
    """Manage access to a factory the caller can see: user credentials of a member of its team.
    An agent key of the team may read the factory's records but not manage them."""
    if principal.kind != "user" or factory.team_uid not in principal.team_uids:
        raise Forbidden(f"factory: managing {factory.uid} needs user credentials of its team")


async def list_factories(
    conn: AsyncConnection,
    principal: Principal,
    *,
    team_uid: str | None,
    search: str | None,
    limit: int,
    after: tuple[datetime, str] | None,
) -> tuple[list[Factory], bool]:
    """Factories ordered by (created_at, uid) ascending; returns (page, has_more)."""
    if team_uid is not None and team_uid not in principal.team_uids:
        raise Forbidden("team_uid: not a team of this credential")
    teams = (
        [team_uid]
        if team_uid
        else [principal.active_team_uid]
        if principal.active_team_uid
        else sorted(principal.team_uids)
    )
    query = select(t.factories).where(t.factories.c.team_uid.in_(teams))
    if search:
        needle = f"%{_escape_like(search.lower())}%"
        query = query.where(
            or_(
                func.lower(t.factories.c.name).like(needle, escape="\\"),
                func.lower(func.coalesce(t.factories.c.alias, "")).like(needle, escape="\\"),
            )
        )
    if after is not None:
        query = query.where(
            tuple_(t.factories.c.created_at, t.factories.c.uid) > tuple_(after[0], after[1])
        )
    query = query.order_by(t.factories.c.created_at, t.factories.c.uid).limit(limit + 1)
    rows = (await conn.execute(query)).all()
    return [Factory.from_row(r) for r in rows[:limit]], len(rows) > limit


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
