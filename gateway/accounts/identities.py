"""Teams, users, agents, API keys and managed team secrets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.errors import Forbidden, InvalidRequest, NotFound
from gateway.security import SecretBox, hash_token, new_api_key
from gateway.store import tables as t
from gateway.store.types import utcnow

PrincipalKind = Literal["user", "agent"]


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    uid: str
    display_name: str
    email: str | None
    team_uids: frozenset[str]
    active_team_uid: str | None = None

    def with_active_team(self, team_uid: str | None) -> Principal:
        if team_uid is None:
            return self
        if team_uid not in self.team_uids:
            raise Forbidden("X-Service-Team-Uid: not a team of this credential")
        return Principal(
            self.kind, self.uid, self.display_name, self.email, self.team_uids, team_uid
        )


def creation_team(principal: Principal) -> str:
    """The team a new team-scoped resource belongs to: the active team (X-Service-Team-Uid),
    else the caller's only team."""
    if principal.active_team_uid is not None:
        return principal.active_team_uid
    if len(principal.team_uids) != 1:
        raise InvalidRequest(
            "X-Service-Team-Uid: required, this credential belongs to several teams"
        )
    return next(iter(principal.team_uids))


async def create_team(conn: AsyncConnection, name: str) -> str:
    uid = ids.new_id("team")
    await conn.execute(insert(t.teams).values(uid=uid, name=name, created_at=utcnow()))
    return uid


async def require_team(conn: AsyncConnection, team_uid: str) -> None:
    if (await conn.execute(select(t.teams.c.uid).where(t.teams.c.uid == team_uid))).first() is None:
        raise NotFound(f"team: {team_uid} does not exist")


async def create_user(conn: AsyncConnection, team_uid: str, email: str) -> tuple[str, str]:
    """Adds the user (or an existing one with that email) to the team; returns (uid, new key)."""
    await require_team(conn, team_uid)
    if "@" not in email or len(email) > 320:
        raise InvalidRequest("email: expected an email address")
    row = (await conn.execute(select(t.users.c.uid).where(t.users.c.email == email))).first()
    if row is None:
        uid = ids.new_id("user")
        display = email.split("@", 1)[0]
        await conn.execute(
            insert(t.users).values(uid=uid, email=email, display_name=display, created_at=utcnow())
        )
    else:
        uid = row.uid
    member = select(t.team_members).where(
        t.team_members.c.team_uid == team_uid, t.team_members.c.user_uid == uid
    )
    if (await conn.execute(member)).first() is None:
        await conn.execute(insert(t.team_members).values(team_uid=team_uid, user_uid=uid))
    return uid, await issue_api_key(conn, "user", uid)


async def create_agent(conn: AsyncConnection, team_uid: str, name: str) -> tuple[str, str]:
    await require_team(conn, team_uid)
    uid = ids.new_id("agent")
    await conn.execute(
        insert(t.agents).values(uid=uid, team_uid=team_uid, name=name, created_at=utcnow())
    )
    return uid, await issue_api_key(conn, "agent", uid)


async def issue_api_key(conn: AsyncConnection, kind: PrincipalKind, principal_uid: str) -> str:
    key = new_api_key()
    await conn.execute(
        insert(t.api_keys).values(
            key_hash=hash_token(key), kind=kind, principal_uid=principal_uid, created_at=utcnow()
        )
    )
    return key


async def authenticate(conn: AsyncConnection, api_key: str) -> Principal | None:
    row = (
        await conn.execute(select(t.api_keys).where(t.api_keys.c.key_hash == hash_token(api_key)))
    ).first()
    if row is None:
        return None
    if row.kind == "user":
        user = (
            await conn.execute(select(t.users).where(t.users.c.uid == row.principal_uid))
        ).first()
        if user is None:
            return None
        teams = await conn.execute(
            select(t.team_members.c.team_uid).where(t.team_members.c.user_uid == user.uid)
        )
        return Principal(
            "user", user.uid, user.display_name, user.email, frozenset(teams.scalars())
        )
    agent = (
        await conn.execute(select(t.agents).where(t.agents.c.uid == row.principal_uid))
    ).first()
    if agent is None:
        return None
    return Principal("agent", agent.uid, agent.name, None, frozenset({agent.team_uid}))


async def set_team_secret(
    conn: AsyncConnection, box: SecretBox, team_uid: str, name: str, value: str
) -> bool:
    """Creates or replaces a managed secret; True when it replaced an existing one."""
    await require_team(conn, team_uid)
    if not name or len(name) > 200 or not all(c.isalnum() or c in "-_." for c in name):
        raise InvalidRequest("name: use letters, digits, '-', '_' or '.' (at most 200)")
    if not value:
        raise InvalidRequest("value: must not be empty")
    now = utcnow()
    key = (t.team_secrets.c.team_uid == team_uid) & (t.team_secrets.c.name == name)
    exists = (await conn.execute(select(t.team_secrets.c.name).where(key))).first() is not None
    if exists:
        await conn.execute(
            t.team_secrets.update()
            .where(key)
            .values(value_encrypted=box.encrypt(value), updated_at=now)
        )
    else:
        await conn.execute(
            insert(t.team_secrets).values(
                team_uid=team_uid,
                name=name,
                value_encrypted=box.encrypt(value),
                created_at=now,
                updated_at=now,
            )
        )
    return exists


async def get_team_secret(
    conn: AsyncConnection, box: SecretBox, team_uid: str, name: str
) -> str | None:
    row = (
        await conn.execute(
            select(t.team_secrets.c.value_encrypted).where(
                t.team_secrets.c.team_uid == team_uid, t.team_secrets.c.name == name
            )
        )
    ).first()
    return None if row is None else box.decrypt(row.value_encrypted)
