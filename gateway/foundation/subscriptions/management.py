"""Event subscriptions: create, change, rotate and delete, team scoped.

User credentials manage them (a subscription sends the team's events out); agent keys read.
The secret is a Standard Webhooks `whsec_` secret, generated, shown once and stored encrypted;
after a rotation the previous one keeps signing beside the new one for ROTATION_OVERLAP.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from msgspec import UNSET
from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal, creation_team
from gateway.foundation.events.catalogue import check_patterns
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.foundation.subscriptions.models import (
    EventSubscription,
    RotatedSubscriptionSecret,
    SubscriptionCreate,
    SubscriptionPatch,
)
from gateway.kernel import ids
from gateway.kernel.errors import Forbidden, InvalidRequest, NotFound
from gateway.kernel.security import SecretBox, new_standard_webhooks_secret

s = t.event_subscriptions
ROTATION_OVERLAP = timedelta(hours=24)
SUBSCRIPTIONS_PER_TEAM = 100


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: event subscriptions are managed with user credentials")


async def create_subscription(
    conn: AsyncConnection, box: SecretBox, principal: Principal, spec: SubscriptionCreate
) -> EventSubscription:
    require_user(principal)
    team_uid = creation_team(principal)
    events = check_patterns(spec.events, "events")
    if spec.factory_uid is not None:
        await _check_factory(conn, team_uid, spec.factory_uid)
    live = select(s.c.uid).where(s.c.team_uid == team_uid, s.c.deleted_at.is_(None))
    if len((await conn.execute(live)).all()) >= SUBSCRIPTIONS_PER_TEAM:
        raise InvalidRequest(f"url: the team has {SUBSCRIPTIONS_PER_TEAM} subscriptions already")
    uid, secret, now = ids.new_id("evs"), new_standard_webhooks_secret(), utcnow()
    await conn.execute(
        insert(s).values(
            uid=uid,
            team_uid=team_uid,
            factory_uid=spec.factory_uid,
            url=spec.url,
            events=events,
            description=spec.description,
            secret_encrypted=box.encrypt(secret),
            enabled=True,
            created_by=principal.uid,
            created_at=now,
            updated_at=now,
        )
    )
    return EventSubscription.from_row(await _row(conn, uid), secret)


async def _check_factory(conn: AsyncConnection, team_uid: str, factory_uid: str) -> None:
    f = t.factories
    row = (await conn.execute(select(f.c.team_uid).where(f.c.uid == factory_uid))).first()
    if row is None or row.team_uid != team_uid:
        raise InvalidRequest(f"factory_uid: {factory_uid} is no factory of team {team_uid}")


async def list_subscriptions(
    conn: AsyncConnection, principal: Principal
) -> list[EventSubscription]:
    """The active team's subscriptions, else those of every team of the caller, oldest first."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = (
        select(s)
        .where(s.c.team_uid.in_(sorted(teams)), s.c.deleted_at.is_(None))
        .order_by(s.c.created_at, s.c.uid)
    )
    return [EventSubscription.from_row(row) for row in await conn.execute(query)]


async def visible_row(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
    """404 when it does not exist (or was deleted), 403 for another team's."""
    row = await _row(conn, uid)
    if row.team_uid not in principal.team_uids:
        raise Forbidden(f"uid: event subscription {uid} belongs to another team")
    return row


async def update_subscription(
    conn: AsyncConnection, principal: Principal, uid: str, patch: SubscriptionPatch
) -> EventSubscription:
    require_user(principal)
    row = await visible_row(conn, principal, uid)
    url = row.url if patch.url is UNSET else patch.url
    events = row.events if patch.events is UNSET else check_patterns(patch.events, "events")
    enabled = row.enabled if patch.enabled is UNSET else patch.enabled
    description = row.description if patch.description is UNSET else patch.description
    # enabling again starts afresh: what disabled it, and its run of failures, are forgotten
    again = enabled and not row.enabled
    await conn.execute(
        update(s)
        .where(s.c.uid == uid)
        .values(
            url=url,
            events=events,
            enabled=enabled,
            description=description,
            disabled_reason=None if again else s.c.disabled_reason,
            failing_since=None if again else s.c.failing_since,
            updated_at=utcnow(),
        )
    )
    return EventSubscription.from_row(await _row(conn, uid))


async def rotate_secret(
    conn: AsyncConnection, box: SecretBox, principal: Principal, uid: str
) -> RotatedSubscriptionSecret:
    require_user(principal)
    row = await visible_row(conn, principal, uid)
    secret, now = new_standard_webhooks_secret(), utcnow()
    until = now + ROTATION_OVERLAP
    await conn.execute(
        update(s)
        .where(s.c.uid == uid)
        .values(
            secret_encrypted=box.encrypt(secret),
            previous_secret_encrypted=row.secret_encrypted,
            previous_secret_until=until,
            updated_at=now,
        )
    )
    return RotatedSubscriptionSecret(secret=secret, previous_secret_expires_at=until)


async def delete_subscription(conn: AsyncConnection, principal: Principal, uid: str) -> None:
    require_user(principal)
    await visible_row(conn, principal, uid)
    now = utcnow()
    await conn.execute(
        update(s).where(s.c.uid == uid).values(deleted_at=now, enabled=False, updated_at=now)
    )


async def _row(conn: AsyncConnection, uid: str) -> Row[Any]:
    row = (await conn.execute(select(s).where(s.c.uid == uid, s.c.deleted_at.is_(None)))).first()
    if row is None:
        raise NotFound(f"uid: no event subscription {uid}")
    return row
