"""Delivery identity (spec 6.1), in order of preference."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

SERVICE_DELIVERY_HEADER = "x-service-delivery-id"
MAX_IDENTITY = 300


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
        return value[:MAX_IDENTITY]
    return "sha256:" + hashlib.sha256(body).hexdigest()
