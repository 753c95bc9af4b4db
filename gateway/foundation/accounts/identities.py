"""Teams, users, agents, API keys and managed team secrets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.kernel.security import SecretBox, hash_token, new_api_key

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


# The key's owner in one statement, built once: a user (one row per team, or one row with no
# team) or an agent. Authentication runs on every API request; three statements built per call
# were a third of a simple request's time.
_users, _agents, _keys, _members = t.users, t.agents, t.api_keys, t.team_members
_KEY_OWNER = (
    select(
        _keys.c.kind,
        _users.c.uid.label("user_uid"),
        _users.c.display_name,
        _users.c.email,
        _members.c.team_uid.label("member_of"),
        _agents.c.uid.label("agent_uid"),
        _agents.c.name.label("agent_name"),
        _agents.c.team_uid.label("agent_team"),
    )
    .select_from(
        _keys.outerjoin(_users, (_keys.c.kind == "user") & (_users.c.uid == _keys.c.principal_uid))
        .outerjoin(_members, _members.c.user_uid == _users.c.uid)
        .outerjoin(_agents, (_keys.c.kind != "user") & (_agents.c.uid == _keys.c.principal_uid))
    )
    .where(_keys.c.key_hash == bindparam("key_hash"))
)


async def authenticate(conn: AsyncConnection, api_key: str) -> Principal | None:
    return await authenticate_hash(conn, hash_token(api_key))


async def authenticate_hash(conn: AsyncConnection, key_hash: str) -> Principal | None:
    """The principal whose API key hashes to `key_hash`; None for an unknown key or one whose
    user or agent is gone."""
    rows = (await conn.execute(_KEY_OWNER, {"key_hash": key_hash})).all()
    if not rows:
        return None
    first = rows[0]
    if first.kind == "user":
        if first.user_uid is None:
            return None
        teams = frozenset(row.member_of for row in rows if row.member_of is not None)
        return Principal("user", first.user_uid, first.display_name, first.email, teams)
    if first.agent_uid is None:
        return None
    return Principal(
        "agent", first.agent_uid, first.agent_name, None, frozenset({first.agent_team})
    )


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
