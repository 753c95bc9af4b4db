"""Per-webhook ingress configuration, prepared once when loaded so a request only compares.

A provider connection is prepared into the same `WebhookConfig` (`connection_config.py`): its
provider's verifier in signature mode, `provider` set."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.backends.contract import Target, shard_of
from gateway.foundation.store import tables as t
from gateway.kernel.rejections import Reason
from gateway.kernel.security import SecretBox, hash_token
from gateway.webhook_gateway.signatures import SignatureError, SignatureScheme, get_scheme
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal

log = logging.getLogger("gateway.ingress")

# The body a verifier did not parse (most do not: only Linear's timestamp is inside the body)
NOT_PARSED: Any = object()
# (headers with lower-case names, raw body, now) -> (why it failed, or None when valid; the
# provider's delivery id; the body as parsed JSON if verifying parsed it, else NOT_PARSED)
Verdict = tuple[Reason | None, str | None, Any]
Verifier = Callable[[Mapping[str, str], bytes, float], Verdict]
# the provider's delivery id from the parsed body (Slack's event_id), for providers that send
# none in a header: (headers, payload) -> id
BodyIdentity = Callable[[Mapping[str, str], Any], str | None]


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    uid: str
    enabled: bool
    version: int
    auth_mode: str  # "token" | "url_token" | "signature"
    token_hash: bytes | None  # token modes: hex SHA-256 of the token
    verifier: Verifier | None  # signature mode
    delivery_id_header: str | None
    target: Target
    # Slack's bodies need translating before they are stored
    # (gateway/webhook_gateway/ingress/slack_bodies.py)
    slack: bool = False
    # a provider connection's provider (None: a custom webhook)
    provider: str | None = None
    body_identity: BodyIdentity | None = None

    def token_matches(self, presented: str) -> bool:
        if self.token_hash is None:
            return False
        return hmac.compare_digest(hash_token(presented).encode(), self.token_hash)


_COLUMNS = (
    t.webhooks.c.uid,
    t.webhooks.c.auth_mode,
    t.webhooks.c.signature_scheme,
    t.webhooks.c.token_hash,
    t.webhooks.c.secret_encrypted,
    t.webhooks.c.secret_name,
    t.webhooks.c.delivery_id_header,
    t.webhooks.c.enabled,
    t.webhooks.c.config_version,
    t.team_secrets.c.value_encrypted.label("team_secret"),
)


def _query() -> Any:
    joined = t.webhooks.join(t.factories, t.factories.c.uid == t.webhooks.c.factory_uid).outerjoin(
        t.team_secrets,
        and_(
            t.team_secrets.c.team_uid == t.factories.c.team_uid,
            t.team_secrets.c.name == t.webhooks.c.secret_name,
        ),
    )
    return select(*_COLUMNS).select_from(joined).where(t.webhooks.c.deleted_at.is_(None))


async def load_one(conn: AsyncConnection, box: SecretBox, uid: str) -> WebhookConfig | None:
    row = (await conn.execute(_query().where(t.webhooks.c.uid == uid))).first()
    return None if row is None else prepare(row, box)


async def load_all(conn: AsyncConnection, box: SecretBox) -> list[WebhookConfig]:
    return [prepare(row, box) for row in await conn.execute(_query())]


def prepare(row: Row[Any], box: SecretBox) -> WebhookConfig:
    """Decrypt and prepare the credential now; an unusable one makes every delivery a 401."""
    token_hash: str | None = None
    verifier: Verifier | None = None
    try:
        secret = stored_secret(row, box)
        if row.auth_mode in ("token", "url_token"):
            token_hash = hash_token(secret) if row.secret_name and secret else row.token_hash
        elif row.auth_mode == "signature" and secret is not None:
            verifier = _verifier(row.signature_scheme, secret)
    except (ValueError, KeyError) as exc:
        log.warning("webhook %s: credential unusable (%s); deliveries get 401", row.uid, exc)
    return WebhookConfig(
        uid=row.uid,
        enabled=bool(row.enabled),
        version=int(row.config_version),
        auth_mode=row.auth_mode,
        token_hash=token_hash.encode() if token_hash else None,
        verifier=verifier,
        delivery_id_header=_identity_header(row.uid, row.delivery_id_header),
        target=Target(row.uid, int(row.config_version), shard_of(row.uid)),
        slack=row.auth_mode == "signature" and row.signature_scheme == "slack",
    )


def _identity_header(uid: str, name: str | None) -> str | None:
    """The configured delivery id header; one saved before credential and signature headers were
    refused is ignored (the identity falls back to the provider's id, X-Service-Delivery-Id or
    the body digest) rather than storing a secret as the identity."""
    if not name:
        return None
    refusal = identity_header_refusal(name)
    if refusal is not None:
        log.warning("webhook %s: delivery id header %r %s; ignored", uid, name, refusal)
        return None
    return name.lower()


def stored_secret(row: Row[Any], box: SecretBox) -> str | None:
    """The row's own secret (`secret_encrypted`) first, else the team secret it names
    (`team_secret`, joined): a webhook a definition file declares keeps the value its managed
    secret had when the file applied (an API webhook or a provider connection naming a managed
    secret has none of its own, and follows the secret); ValueError when it names a team secret
    that is gone."""
    if row.secret_encrypted:
        return box.decrypt(row.secret_encrypted)
    if row.secret_name:
        if row.team_secret is None:
            raise ValueError(f"team secret {row.secret_name!r} does not exist")
        return box.decrypt(row.team_secret)
    return None


def _verifier(scheme_name: str | None, secret: str) -> Verifier:
    # get_scheme takes an alias too: a row written by a process older than revision 0014
    scheme = get_scheme(scheme_name or "")
    return SignatureCheck(scheme, scheme.prepare_key(secret))


class SignatureCheck:
    """A webhook's Verifier: its scheme and prepared key (a slotted object, not a closure: one
    per webhook, ~56 bytes against ~265)."""

    __slots__ = ("key", "scheme")

    def __init__(self, scheme: SignatureScheme, key: bytes) -> None:
        self.scheme = scheme
        self.key = key

    def __call__(self, headers: Mapping[str, str], body: bytes, now: float) -> Verdict:
        try:
            verified = self.scheme.verify(self.key, headers, body, now)
        except SignatureError as exc:
            return exc.reason, None, NOT_PARSED
        payload = verified.payload
        return None, verified.delivery_id, NOT_PARSED if payload is None else payload
