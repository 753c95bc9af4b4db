"""GitLab: ``x-gitlab-token: <the secret token>``, sent as is and compared in constant time
against the secret's UTF-8 bytes. Nothing is signed: no timestamp, no body MAC.

The delivery id is ``idempotency-key`` (GitLab 17.4 and later), which GitLab keeps across the
retries of a delivery, else ``x-gitlab-event-uuid``. A provider connection's verifier
(``PROVIDER_VERIFIERS``), not a scheme of custom webhooks.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    SignatureError,
    Verified,
    required_header,
    utf8_key,
)

_TOKEN = "x-gitlab-token"  # noqa: S105 (a header name)
_DELIVERIES = ("idempotency-key", "x-gitlab-event-uuid")


class GitLab:
    name = "gitlab"
    signature_headers: tuple[str, ...] = (_TOKEN,)
    delivery_id_headers: tuple[str, ...] = _DELIVERIES

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        presented = required_header(headers, _TOKEN)
        try:  # the latin-1 decoding of the raw header: back to the bytes GitLab sent
            token = presented.encode("latin-1")
        except UnicodeEncodeError:  # a caller other than the ingress
            raise SignatureError(
                "malformed x-gitlab-token header", Reason.HEADER_MALFORMED
            ) from None
        if not hmac.compare_digest(token, key):
            raise SignatureError("token does not match", Reason.TOKEN_UNKNOWN)
        return Verified(headers.get(_DELIVERIES[0]) or headers.get(_DELIVERIES[1]) or None)


SCHEME = GitLab()
