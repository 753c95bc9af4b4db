"""Delivery identity: the value de-duplication keys on (which header may carry it:
`gateway.webhook_gateway.signatures.identity_headers`).

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
