"""Custom webhooks: create, change, rotate and delete, with secrets generated or brought in.

Every change bumps `config_version` in the same transaction and, after the commit, is published
to every gateway process (services.config_publisher), so ingress sees it on its next request.
Callers pass a connection of `Database.transaction()`; reads and results are `models.Webhook`.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import UNSET
from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import get_team_secret
from gateway.foundation.services import Services
from gateway.foundation.store import after_commit
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import InvalidRequest, ManagedSecret, NotFound, WebhookLimitReached
from gateway.kernel.security import hash_token, new_standard_webhooks_secret, new_webhook_token
from gateway.webhook_gateway.signatures import SCHEMES
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal
from gateway.webhook_gateway.webhooks.models import (
    RotatedSecret,
    Webhook,
    WebhookCreate,
    WebhookPatch,
)

WEBHOOKS_PER_FACTORY = 20
GENERATED_SIGNATURE_SCHEME = "standard_webhooks"
_URL_SAFE = re.compile(r"^[A-Za-z0-9._~-]+$")


def check_identity_header(name: str | None, field: str = "delivery_id_header") -> None:
    """A 400 naming `field` when header `name` may not carry the delivery identity (it carries
    a credential or a signature: see gateway.webhook_gateway.signatures.identity_headers)."""
    refusal = None if name is None else identity_header_refusal(name)
    if refusal is not None:
        raise InvalidRequest(
            f"{field}: {name!r} {refusal}; name the header in which the sender puts its own "
            "event id"
        )


def check_signing_secret(scheme: str, secret: str, field: str = "secret") -> None:
    try:
        SCHEMES[scheme].prepare_key(secret)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: not a usable {scheme} signing secret ({exc})") from exc


async def check_secret_name(
    conn: AsyncConnection, services: Services, team_uid: str, spec: WebhookCreate
) -> None:
    assert spec.secret_name is not None
    value = await get_team_secret(conn, services.secret_box, team_uid, spec.secret_name)
    if value is None:
        raise InvalidRequest(f"secret_name: no team secret named {spec.secret_name!r}")
    check_secret_value(spec.auth_mode, spec.signature_scheme, value, "secret_name")


def check_secret_value(auth_mode: str, scheme: str | None, value: str, field: str) -> None:
    """A 400 naming `field` when a managed secret's value cannot be this webhook's credential:
    a url_token must be URL-safe, a signing secret usable by its scheme."""
    if auth_mode == "url_token" and not _URL_SAFE.match(value):
        raise InvalidRequest(f"{field}: a url_token secret must be URL-safe (A-Z a-z 0-9 - _ . ~)")
    if auth_mode == "signature" and scheme:
        check_signing_secret(scheme, value, field)


async def _lock_factory(conn: AsyncConnection, factory_uid: str) -> None:
    """Serialise webhook creation per factory so the limit holds under concurrency."""
    query = select(t.factories.c.uid).where(t.factories.c.uid == factory_uid)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    await conn.execute(query)


async def create_webhook(
    conn: AsyncConnection,
    services: Services,
    factory_uid: str,
    team_uid: str,
    spec: WebhookCreate,
    *,
    definition_name: str | None = None,
) -> Webhook:
    """Inserts the webhook; its `secret` is set when the service generated one."""
    await _lock_factory(conn, factory_uid)
    live = select(func.count()).where(
        t.webhooks.c.factory_uid == factory_uid, t.webhooks.c.deleted_at.is_(None)
    )
    if (await conn.execute(live)).scalar_one() >= WEBHOOKS_PER_FACTORY:
        raise WebhookLimitReached(f"factory: already has {WEBHOOKS_PER_FACTORY} webhooks")
    check_identity_header(spec.delivery_id_header)
    if spec.secret_name is not None:
        await check_secret_name(conn, services, team_uid, spec)
    if spec.secret is not None and spec.signature_scheme:
        check_signing_secret(spec.signature_scheme, spec.secret)
    generated, token_hash, encrypted = _initial_credential(services, spec)
    uid, now = ids.new_id("wh"), utcnow()
    await conn.execute(
        insert(t.webhooks).values(
            uid=uid,
            factory_uid=factory_uid,
            name=spec.name,
            auth_mode=spec.auth_mode,
            signature_scheme=spec.signature_scheme,
            token_hash=token_hash,
            secret_encrypted=encrypted,
            secret_name=spec.secret_name,
            delivery_id_header=spec.delivery_id_header,
            enabled=spec.enabled,
            config_version=1,
            definition_name=definition_name,
            created_at=now,
            updated_at=now,
        )
    )
    _publish(conn, services, uid, 1)
    return Webhook.from_row(
        await get_webhook_row(conn, factory_uid, uid), _base(services), generated
    )


def _initial_credential(
    services: Services, spec: WebhookCreate
) -> tuple[str | None, str | None, str | None]:
    """(generated secret to show once, token hash, encrypted signing secret)."""
    if spec.secret_name is not None:
        return None, None, None
    if spec.auth_mode in ("token", "url_token"):
        token = new_webhook_token()
        return token, hash_token(token), None
    if spec.secret is not None:
        return None, None, services.secret_box.encrypt(spec.secret)
    if spec.signature_scheme == GENERATED_SIGNATURE_SCHEME:
        secret = new_standard_webhooks_secret()
        return secret, None, services.secret_box.encrypt(secret)
    return None, None, None  # supplied in a second step, through rotate-secret


async def get_webhook_row(conn: AsyncConnection, factory_uid: str, uid: str) -> Row[Any]:
    row = (
        await conn.execute(
            select(t.webhooks).where(
                t.webhooks.c.uid == uid,
                t.webhooks.c.factory_uid == factory_uid,
                t.webhooks.c.deleted_at.is_(None),
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"webhook: {uid} not found in this factory")
    return row


async def get_webhook(
    conn: AsyncConnection, services: Services, factory_uid: str, uid: str
) -> Webhook:
    return Webhook.from_row(await get_webhook_row(conn, factory_uid, uid), _base(services))


async def list_webhooks(
    conn: AsyncConnection, services: Services, factory_uid: str
) -> list[Webhook]:
    query = (
        select(t.webhooks)
        .where(t.webhooks.c.factory_uid == factory_uid, t.webhooks.c.deleted_at.is_(None))
        .order_by(t.webhooks.c.created_at, t.webhooks.c.uid)
    )
    base = _base(services)
    return [Webhook.from_row(row, base) for row in await conn.execute(query)]


async def update_webhook(
    conn: AsyncConnection, services: Services, factory_uid: str, uid: str, patch: WebhookPatch
) -> Webhook:
    values = {
        name: getattr(patch, name)
        for name in patch.__struct_fields__
        if getattr(patch, name) is not UNSET
    }
    return Webhook.from_row(
        await _change(conn, services, factory_uid, uid, values), _base(services)
    )


async def write_file_webhook(
    conn: AsyncConnection,
    services: Services,
    factory_uid: str,
    spec: WebhookCreate,
    secret_value: str,
    *,
    uid: str | None,
    definition_name: str,
) -> str:
    """A webhook a factory's definition file declares, created (`uid` None) or rewritten in
    place; its uid. Such a webhook never gets a generated credential: it keeps the value its
    managed secret (`spec.secret_name`) has now, encrypted, until its file applies again
    (ingress prefers that copy to the secret's current value). The caller checked the spec
    and the value (`check_secret_value`, the identity header)."""
    values = {
        "name": spec.name,
        "auth_mode": spec.auth_mode,
        "signature_scheme": spec.signature_scheme,
        "token_hash": None,
        "secret_encrypted": services.secret_box.encrypt(secret_value),
        "secret_name": spec.secret_name,
        "delivery_id_header": spec.delivery_id_header,
        "enabled": spec.enabled,
        "definition_name": definition_name,
    }
    if uid is not None:
        await _change(conn, services, factory_uid, uid, values)
        return uid
    uid, now = ids.new_id("wh"), utcnow()
    await conn.execute(
        insert(t.webhooks).values(
            uid=uid,
            factory_uid=factory_uid,
            config_version=1,
            created_at=now,
            updated_at=now,
            **values,
        )
    )
    _publish(conn, services, uid, 1)
    return uid


async def _change(
    conn: AsyncConnection, services: Services, factory_uid: str, uid: str, values: dict[str, Any]
) -> Row[Any]:
    """Writes validated column values and bumps the version; the change is published after the
    commit."""
    check_identity_header(values.get("delivery_id_header"))
    row = await get_webhook_row(conn, factory_uid, uid)
    version = row.config_version + 1
    await conn.execute(
        update(t.webhooks)
        .where(t.webhooks.c.uid == uid)
        .values(**values, config_version=version, updated_at=utcnow())
    )
    _publish(conn, services, uid, version)
    return await get_webhook_row(conn, factory_uid, uid)


async def rotate_secret(
    conn: AsyncConnection, services: Services, factory_uid: str, uid: str, supplied: str | None
) -> RotatedSecret:
    """New credential; the old one stops working at once."""
    row = await get_webhook_row(conn, factory_uid, uid)
    if row.secret_name is not None:
        raise ManagedSecret(
            f"secret_name: this webhook uses team secret {row.secret_name!r}; update that secret"
        )
    if supplied is not None:
        if row.auth_mode != "signature":
            raise InvalidRequest("secret: generated by the service for token modes")
        check_signing_secret(row.signature_scheme, supplied)
    elif row.auth_mode == "signature" and row.signature_scheme != GENERATED_SIGNATURE_SCHEME:
        raise InvalidRequest(
            f"secret: required; {row.signature_scheme} secrets come from the provider"
        )
    spec = WebhookCreate(
        name=row.name,
        auth_mode=row.auth_mode,
        signature_scheme=row.signature_scheme,
        secret=supplied,
    )
    generated, token_hash, encrypted = _initial_credential(services, spec)
    changes = {"token_hash": token_hash, "secret_encrypted": encrypted}
    rotated = Webhook.from_row(
        await _change(conn, services, factory_uid, uid, changes), _base(services), generated
    )
    return RotatedSecret(ingress_url=rotated.ingress_url, secret=rotated.secret)


async def delete_webhook(
    conn: AsyncConnection, services: Services, factory_uid: str, uid: str
) -> None:
    row = await get_webhook_row(conn, factory_uid, uid)
    version = row.config_version + 1
    await conn.execute(
        update(t.webhooks)
        .where(t.webhooks.c.uid == uid)
        .values(deleted_at=utcnow(), config_version=version, updated_at=utcnow())
    )
    _publish(conn, services, uid, version)


async def team_secret_changed(services: Services, team_uid: str, name: str) -> None:
    """Webhooks reading this managed secret get a new version, so ingress reloads them."""
    async with services.database.transaction() as conn:
        factories = select(t.factories.c.uid).where(t.factories.c.team_uid == team_uid)
        rows = (
            await conn.execute(
                select(t.webhooks.c.uid, t.webhooks.c.config_version).where(
                    t.webhooks.c.factory_uid.in_(factories),
                    t.webhooks.c.secret_name == name,
                    t.webhooks.c.deleted_at.is_(None),
                )
            )
        ).all()
        for row in rows:
            await conn.execute(
                update(t.webhooks)
                .where(t.webhooks.c.uid == row.uid)
                .values(config_version=row.config_version + 1, updated_at=utcnow())
            )
            _publish(conn, services, row.uid, row.config_version + 1)


def _publish(conn: AsyncConnection, services: Services, uid: str, version: int) -> None:
    async def publish() -> None:
        await services.config_publisher.webhook_changed(uid, version)

    after_commit(conn, publish)


def _base(services: Services) -> str:
    return services.settings.webhook_base_url
