"""Delivery identity (spec 6.1): which header may carry it, and the value de-duplication keys on.

Two deliveries are the same event exactly when their identities are equal over their full
length. The delivery log keeps MAX_IDENTITY characters of it, so a longer identity is replaced
by a digest of all of it, never cut (two ids sharing their first 300 characters stay apart).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

SERVICE_DELIVERY_HEADER = "x-service-delivery-id"
MAX_IDENTITY = 300  # characters the delivery log's identity column holds
LONG_ID_PREFIX = "sha256-id:"  # a digest of a longer identity (a body digest is "sha256:")

# Headers that carry a credential: as the identity, the secret would be stored in the delivery
# log in plain text, and every delivery after the first would share it (a Duplicate).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
# Name parts that mark a credential or a signature in headers no scheme here reads (tokens in
# headers, as url_token-style senders use: X-Gitlab-Token, X-Webhook-Secret, X-Api-Key, ...).
CREDENTIAL_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "signature", "hmac", "apikey", "credential", "auth"}
)


def delivery_identity(
    configured_header: str | None,
    headers: Mapping[str, str],
    provider_id: str | None,
    body: bytes,
) -> str:
    """The webhook's configured header, else the provider's own delivery id (signed webhooks),
    else X-Service-Delivery-Id, else a SHA-256 of the body."""
    value = headers.get(configured_header) if configured_header else None
    value = value or provider_id or headers.get(SERVICE_DELIVERY_HEADER)
    if value:
        if len(value) <= MAX_IDENTITY:
            return value
        return LONG_ID_PREFIX + hashlib.sha256(value.encode()).hexdigest()
    return "sha256:" + hashlib.sha256(body).hexdigest()


def identity_header_refusal(name: str) -> str | None:
    """Why header `name` may not be a webhook's delivery id header, or None when it may."""
    from gateway.ingress.signatures import SCHEMES

    lower = name.lower()
    if lower in CREDENTIAL_HEADERS:
        return "carries credentials"
    for scheme in SCHEMES.values():
        if lower in scheme.signature_headers:
            return f"carries the {scheme.name} signature or its timestamp"
    words = set(lower.split("-"))
    if words & CREDENTIAL_WORDS or {"api", "key"} <= words:
        return "looks like a credential or signature header"
    return None
