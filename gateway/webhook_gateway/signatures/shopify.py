"""Shopify: ``x-shopify-hmac-sha256: <base64 HMAC-SHA256(body)>``, key = the secret as UTF-8.

No signed timestamp, so no freshness check. The delivery id is ``x-shopify-webhook-id``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    SignatureError,
    Verified,
    base64_digest,
    hmac_sha256,
    required_header,
    utf8_key,
)

_SIGNATURE, _DELIVERY = "x-shopify-hmac-sha256", "x-shopify-webhook-id"


class Shopify:
    name = "shopify"
    signature_headers: tuple[str, ...] = (_SIGNATURE,)
    delivery_id_headers: tuple[str, ...] = (_DELIVERY,)

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, _SIGNATURE)
        provided = base64_digest(header, "x-shopify-hmac-sha256 header")
        if not hmac.compare_digest(provided, hmac_sha256(key, b"", body)):
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        return Verified(headers.get(_DELIVERY) or None)


SCHEME = Shopify()
