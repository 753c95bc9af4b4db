"""Provider connections: create, change, rotate and delete, team scoped.

A connection serves every factory of its team. Every change bumps `config_version` in the same
transaction and, after the commit, is published to every gateway process (the same publisher
and version keys as custom webhooks: a connection's uid never collides with a webhook's), so
ingress sees it on its next request. Callers pass a connection of `Database.transaction()`;
reads and results are `models.ProviderConnection`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import UNSET
from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal, creation_team, get_team_secret
from gateway.foundation.services import Services
from gateway.foundation.store import after_commit
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, ManagedSecret, NotFound
from gateway.kernel.security import new_connection_secret
from gateway.webhook_gateway.connections import reply_settings
from gateway.webhook_gateway.connections.models import (
    GENERATED,
    ConnectionCreate,
    ConnectionPatch,
    ProviderConnection,
    RotatedConnectionSecret,
)
from gateway.webhook_gateway.replies.credentials import FIELDS
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS

UID_PREFIX = ids.CONNECTION_PREFIX
c = t.provider_connections
REPLY_FIELDS = (*FIELDS, "api_base_url", "reply_templates")


def require_user(principal: Principal) -> None:
    """Connections hold a team-wide credential: user keys manage them, agent keys read them."""
    if principal.kind != "user":
        raise Forbidden("Authorization: managing provider connections needs user credentials")


def check_secret(provider: str, secret: str, field: str = "secret") -> None:
    try:
        PROVIDER_VERIFIERS[provider].prepare_key(secret)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: not a usable {provider} secret ({exc})") from exc


async def create_connection(
    conn: AsyncConnection, services: Services, principal: Principal, spec: ConnectionCreate
) -> ProviderConnection:
    """For the active team (or the caller's only team); the answer carries `secret` when the
    service generated it."""
    require_user(principal)
    return await connect(conn, services, creation_team(principal), spec)


async def connect(
    conn: AsyncConnection, services: Services, team_uid: str, spec: ConnectionCreate
) -> ProviderConnection:
    """Inserts the connection for `team_uid` (`gateway admin connect` calls this directly)."""
    if spec.secret_name is not None:
        value = await get_team_secret(conn, services.secret_box, team_uid, spec.secret_name)
        if value is None:
            raise InvalidRequest(f"secret_name: no team secret named {spec.secret_name!r}")
        check_secret(spec.provider, value, "secret_name")
    generated = None
    secret = spec.secret
    if secret is not None:
        check_secret(spec.provider, secret)
    elif spec.secret_name is None and spec.provider in GENERATED:
        generated = secret = new_connection_secret()
    replies = reply_settings.applied(spec.provider, reply_settings.ReplySettings(), spec)
    uid, now = ids.new_id(UID_PREFIX), utcnow()
    await conn.execute(
        insert(c).values(
            **reply_settings.columns(replies, services.secret_box),
            uid=uid,
            team_uid=team_uid,
            provider=spec.provider,
            name=spec.name,
            secret_encrypted=None if secret is None else services.secret_box.encrypt(secret),
            secret_name=spec.secret_name,
            bot=spec.bot,
            enabled=True,
            config_version=1,
            created_at=now,
            updated_at=now,
        )
    )
    _publish(conn, services, uid, 1)
    return _answer(await _row(conn, uid), services, generated)


async def list_connections(
    conn: AsyncConnection, services: Services, principal: Principal
) -> list[ProviderConnection]:
    """The active team's connections, else those of every team of the caller, oldest first."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = (
        select(c)
        .where(c.c.team_uid.in_(sorted(teams)), c.c.deleted_at.is_(None))
        .order_by(c.c.created_at, c.c.uid)
    )
    return [_answer(row, services) for row in await conn.execute(query)]


async def get_connection(
    conn: AsyncConnection, services: Services, principal: Principal, uid: str
) -> ProviderConnection:
    return _answer(await visible_row(conn, principal, uid), services)


async def visible_row(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
    """404 when it does not exist (or was deleted), 403 when it belongs to a team the caller
    is not in (uids are not secrets, as for factories)."""
    row = await _row(conn, uid)
    if row.team_uid not in principal.team_uids:
        raise Forbidden(f"uid: provider connection {uid} belongs to another team")
    return row


async def update_connection(
    conn: AsyncConnection,
    services: Services,
    principal: Principal,
    uid: str,
    patch: ConnectionPatch,
) -> ProviderConnection:
    require_user(principal)
    row = await visible_row(conn, principal, uid)
    values = {
        name: getattr(patch, name)
        for name in ("name", "enabled", "bot")
        if getattr(patch, name) is not UNSET
    }
    if _names_replies(patch):
        current = reply_settings.stored(row, services.secret_box)
        replies = reply_settings.applied(row.provider, current, patch)
        values |= reply_settings.columns(replies, services.secret_box)
    return _answer(await _change(conn, services, uid, values), services)


def _names_replies(patch: ConnectionPatch) -> bool:
    return any(getattr(patch, name) is not UNSET for name in REPLY_FIELDS)


async def rotate_secret(
    conn: AsyncConnection,
    services: Services,
    principal: Principal,
    uid: str,
    supplied: str | None,
) -> RotatedConnectionSecret:
    """The provider's new secret (`supplied`), or a generated one for the providers that take
    one of the user's choosing; the old one stops working at once."""
    require_user(principal)
    row = await visible_row(conn, principal, uid)
    if row.secret_name is not None:
        raise ManagedSecret(
            f"secret_name: this connection uses team secret {row.secret_name!r}; update that secret"
        )
    generated = None
    if supplied is not None:
        check_secret(row.provider, supplied)
    elif row.provider in GENERATED:
        generated = supplied = new_connection_secret()
    else:
        raise InvalidRequest(f"secret: required; {row.provider} issues its own signing secret")
    await _change(conn, services, uid, {"secret_encrypted": services.secret_box.encrypt(supplied)})
    return RotatedConnectionSecret(secret=UNSET if generated is None else generated)


async def delete_connection(
    conn: AsyncConnection, services: Services, principal: Principal, uid: str
) -> None:
    require_user(principal)
    await visible_row(conn, principal, uid)
    await _change(conn, services, uid, {"deleted_at": utcnow()})


async def team_secret_changed(
    conn: AsyncConnection, services: Services, team_uid: str, name: str
) -> None:
    """Connections reading this managed secret get a new version, so ingress reloads them."""
    rows = (
        await conn.execute(
            select(c.c.uid).where(
                c.c.team_uid == team_uid, c.c.secret_name == name, c.c.deleted_at.is_(None)
            )
        )
    ).all()
    for row in rows:
        await _change(conn, services, row.uid, {})


async def _row(conn: AsyncConnection, uid: str) -> Row[Any]:
    row = (await conn.execute(select(c).where(c.c.uid == uid, c.c.deleted_at.is_(None)))).first()
    if row is None:
        raise NotFound(f"uid: no provider connection {uid}")
    return row


async def _change(
    conn: AsyncConnection, services: Services, uid: str, values: Mapping[str, object]
) -> Row[Any]:
    """Writes validated column values and bumps the version; the change is published after the
    commit. The row as it was before, when `values` deleted it."""
    before = await _row(conn, uid)
    version = before.config_version + 1
    await conn.execute(
        update(c)
        .where(c.c.uid == uid)
        .values(**values, config_version=version, updated_at=utcnow())
    )
    _publish(conn, services, uid, version)
    return before if "deleted_at" in values else await _row(conn, uid)


def _publish(conn: AsyncConnection, services: Services, uid: str, version: int) -> None:
    async def publish() -> None:
        await services.config_publisher.webhook_changed(uid, version)

    after_commit(conn, publish)


def _answer(row: Row[Any], services: Services, generated: str | None = None) -> ProviderConnection:
    names = reply_settings.credential_names(row, services.secret_box)
    return ProviderConnection.from_row(row, services.settings.webhook_base_url, names, generated)
