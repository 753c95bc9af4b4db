"""Smee-compatible channels of a webhook or provider connection: create, list, revoke, resolve.

A channel is a capability URL (`/api/v1/channels/<token>`): smee-client sends no Authorization
header, so the unguessable token in the path is the credential. It is shown once, kept as its
SHA-256, and reaches only its own source's deliveries. User credentials of the source's team
create and revoke channels (a channel hands the deliveries to whoever holds the URL); deleting
the row revokes it, and a stream open on it ends within moments.
"""

from __future__ import annotations

import secrets

from sqlalchemy import delete, func, insert, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.kernel.security import hash_token
from gateway.webhook_gateway.connections.management import visible_row
from gateway.webhook_gateway.deliveries.channel_models import ChannelCreate, DeliveryChannel

ch = t.delivery_channels
CHANNELS_PER_SOURCE = 20
TOKEN_PREFIX = "smee_"  # noqa: S105 (a prefix, not a token)
PATH = "/api/v1/channels/"


def channel_url(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}{PATH}{token}"


async def source_team(conn: AsyncConnection, principal: Principal, kind: str, uid: str) -> str:
    """The team of the webhook (`kind` "webhook") or connection the caller can see: 404 when
    it does not exist, 403 when it is another team's."""
    if kind == "connection":
        return str((await visible_row(conn, principal, uid)).team_uid)
    w = t.webhooks
    query = select(w.c.factory_uid).where(w.c.uid == uid, w.c.deleted_at.is_(None))
    factory_uid = (await conn.execute(query)).scalar()
    if factory_uid is None:
        raise NotFound(f"webhook_uid: no webhook {uid}")
    return (await get_accessible_factory(conn, principal, factory_uid)).team_uid


def _require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: channels are managed with user credentials")


async def create_channel(
    conn: AsyncConnection,
    principal: Principal,
    source_uid: str,
    team_uid: str,
    spec: ChannelCreate,
    base_url: str,
) -> DeliveryChannel:
    _require_user(principal)
    count = select(func.count()).select_from(ch).where(ch.c.source_uid == source_uid)
    if (await conn.execute(count)).scalar_one() >= CHANNELS_PER_SOURCE:
        raise InvalidRequest(f"source: {CHANNELS_PER_SOURCE} channels already; revoke one")
    uid, token = ids.new_id("chn"), TOKEN_PREFIX + secrets.token_urlsafe(32)
    await conn.execute(
        insert(ch).values(
            uid=uid,
            source_uid=source_uid,
            team_uid=team_uid,
            token_hash=hash_token(token),
            description=spec.description,
            created_by=principal.uid,
            created_at=utcnow(),
        )
    )
    row = (await conn.execute(select(ch).where(ch.c.uid == uid))).one()
    return DeliveryChannel.from_row(row, channel_url(base_url, token))


async def list_channels(conn: AsyncConnection, source_uid: str) -> list[DeliveryChannel]:
    query = select(ch).where(ch.c.source_uid == source_uid).order_by(ch.c.created_at, ch.c.uid)
    return [DeliveryChannel.from_row(row) for row in await conn.execute(query)]


async def revoke_channel(
    conn: AsyncConnection, principal: Principal, source_uid: str, channel_uid: str
) -> None:
    _require_user(principal)
    gone = await conn.execute(
        delete(ch).where(ch.c.uid == channel_uid, ch.c.source_uid == source_uid)
    )
    if gone.rowcount == 0:
        raise NotFound(f"channel_uid: no channel {channel_uid} of {source_uid}")


async def resolve(conn: AsyncConnection, token: str) -> tuple[str, str] | None:
    """The channel of `token` (uid, source_uid) while it and its source exist, else None."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        return None
    w, c = t.webhooks, t.provider_connections
    live_sources = union_all(
        select(w.c.uid.label("uid")).where(w.c.deleted_at.is_(None)),
        select(c.c.uid.label("uid")).where(c.c.deleted_at.is_(None)),
    ).subquery()
    query = (
        select(ch.c.uid, ch.c.source_uid)
        .join(live_sources, live_sources.c.uid == ch.c.source_uid)
        .where(ch.c.token_hash == hash_token(token))
    )
    row = (await conn.execute(query)).first()
    return None if row is None else (row.uid, row.source_uid)


async def still_open(conn: AsyncConnection, channel_uid: str) -> bool:
    query = select(ch.c.uid).where(ch.c.uid == channel_uid)
    return (await conn.execute(query)).first() is not None
