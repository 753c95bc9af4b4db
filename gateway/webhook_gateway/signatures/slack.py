"""Slack: ``x-slack-signature: v0=<hex>`` over ``v0:{x-slack-request-timestamp}:`` + body.

Key = the app's signing secret as UTF-8; the timestamp must be within the tolerance both
ways. Slack sends no delivery id header.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    SignatureError,
    Verified,
    check_timestamp,
    hex_digest,
    hmac_sha256,
    required_header,
    utf8_key,
)

_PREFIX = "v0="
_UNVERIFIED = Verified(None)
_SIGNATURE, _TIMESTAMP = "x-slack-signature", "x-slack-request-timestamp"


class Slack:
    name = "slack"
    signature_headers: tuple[str, ...] = (_SIGNATURE, _TIMESTAMP)
    delivery_id_headers: tuple[str, ...] = ()

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, _SIGNATURE)
        if not header.startswith(_PREFIX):
            raise SignatureError("malformed x-slack-signature header", Reason.HEADER_MALFORMED)
        timestamp = check_timestamp(headers.get(_TIMESTAMP), now)
        provided = hex_digest(header[len(_PREFIX) :], "x-slack-signature header")
        expected = hmac_sha256(key, b"v0:" + timestamp.encode() + b":", body)
        if not hmac.compare_digest(provided, expected):
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        return _UNVERIFIED


SCHEME = Slack()
