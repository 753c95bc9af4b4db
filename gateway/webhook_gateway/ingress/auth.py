"""Webhook authentication by mode, in CPU only: no I/O, no JSON parsing (but the one a
provider's scheme needs: Linear's signed timestamp is inside the body)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.ingress.webhook_config import NOT_PARSED, Verdict, WebhookConfig


def authenticate(
    config: WebhookConfig, headers: Mapping[str, str], body: bytes, path_token: str | None
) -> Verdict:
    """(why authentication failed, or None when it passed; the provider's own delivery id when
    the signature carries one; the parsed body when verifying parsed it, else NOT_PARSED)."""
    mode = config.auth_mode
    if mode == "token":
        header = headers.get("authorization")
        if not header:
            return Reason.HEADER_MISSING, None, NOT_PARSED
        scheme, _, presented = header.partition(" ")
        presented = presented.strip()
        if scheme.lower() != "bearer" or not presented:
            return Reason.HEADER_MALFORMED, None, NOT_PARSED
        return _token(config, presented), None, NOT_PARSED
    if mode == "url_token":
        if path_token is None:
            return Reason.TOKEN_UNKNOWN, None, NOT_PARSED
        return _token(config, path_token), None, NOT_PARSED
    if mode == "signature" and config.verifier is not None:
        return config.verifier(headers, body, time.time())
    return Reason.CREDENTIAL_UNUSABLE, None, NOT_PARSED


def _token(config: WebhookConfig, presented: str) -> Reason | None:
    if config.token_hash is None:
        return Reason.CREDENTIAL_UNUSABLE
    return None if config.token_matches(presented) else Reason.TOKEN_UNKNOWN
