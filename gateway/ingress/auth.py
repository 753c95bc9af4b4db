"""Webhook authentication by mode, in CPU only: no I/O, no JSON parsing."""

from __future__ import annotations

import time
from collections.abc import Mapping

from gateway.ingress.webhook_config import WebhookConfig


def authenticate(
    config: WebhookConfig, headers: Mapping[str, str], body: bytes, path_token: str | None
) -> tuple[bool, str | None]:
    """(authenticated?, the provider's own delivery id when the signature carries one)."""
    mode = config.auth_mode
    if mode == "token":
        scheme, _, presented = (headers.get("authorization") or "").partition(" ")
        presented = presented.strip()
        return scheme.lower() == "bearer" and bool(presented) and config.token_matches(
            presented
        ), None
    if mode == "url_token":
        return path_token is not None and config.token_matches(path_token), None
    if mode == "signature" and config.verifier is not None:
        return config.verifier(headers, body, time.time())
    return False, None
