"""A provider connection's ingress configuration: the same `WebhookConfig` a custom webhook
gets, prepared once when loaded, with its provider's verifier (`PROVIDER_VERIFIERS`) and, for
Slack, where the delivery id is (the body's `event_id`)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Row, and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import Target, shard_of
from gateway.foundation.store import tables as t
from gateway.kernel.security import SecretBox
from gateway.webhook_gateway import providers
from gateway.webhook_gateway.ingress.webhook_config import (
    BodyIdentity,
    SignatureCheck,
    Verifier,
    WebhookConfig,
    stored_secret,
)
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS

log = logging.getLogger("gateway.ingress")

c = t.provider_connections
_COLUMNS = (
    *(c.c.uid, c.c.provider, c.c.secret_encrypted, c.c.secret_name, c.c.enabled),
    c.c.config_version,
    t.team_secrets.c.value_encrypted.label("team_secret"),
)
# providers that send their delivery id in the body only
_BODY_IDENTITIES: dict[str, BodyIdentity] = {"slack": providers.slack.delivery_id}


def _query() -> Any:
    joined = c.outerjoin(
        t.team_secrets,
        and_(t.team_secrets.c.team_uid == c.c.team_uid, t.team_secrets.c.name == c.c.secret_name),
    )
    return select(*_COLUMNS).select_from(joined).where(c.c.deleted_at.is_(None))


async def load_one(conn: AsyncConnection, box: SecretBox, uid: str) -> WebhookConfig | None:
    row = (await conn.execute(_query().where(c.c.uid == uid))).first()
    return None if row is None else prepare(row, box)


async def load_all(conn: AsyncConnection, box: SecretBox) -> list[WebhookConfig]:
    return [prepare(row, box) for row in await conn.execute(_query())]


def prepare(row: Row[Any], box: SecretBox) -> WebhookConfig:
    """Decrypt and prepare the secret now; an unusable one (or none yet: Slack and Linear
    secrets are brought later) makes every delivery a 401 `credential_unusable`."""
    verifier: Verifier | None = None
    try:
        secret = stored_secret(row, box)
        if secret is not None:
            scheme = PROVIDER_VERIFIERS[row.provider]
            verifier = SignatureCheck(scheme, scheme.prepare_key(secret))
    except (ValueError, KeyError) as exc:
        log.warning(
            "provider connection %s: secret unusable (%s); deliveries get 401", row.uid, exc
        )
    return WebhookConfig(
        uid=row.uid,
        enabled=bool(row.enabled),
        version=int(row.config_version),
        auth_mode="signature",
        token_hash=None,
        verifier=verifier,
        delivery_id_header=None,
        target=Target(row.uid, int(row.config_version), shard_of(row.uid)),
        slack=row.provider == "slack",
        provider=row.provider,
        body_identity=_BODY_IDENTITIES.get(row.provider),
    )
