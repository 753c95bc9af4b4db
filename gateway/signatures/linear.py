"""Linear: ``linear-signature: <hex HMAC-SHA256(body)>``, key = the secret as UTF-8.

Linear's only timestamp is ``webhookTimestamp`` inside the JSON body, and the gateway never
parses JSON before authenticating, so there is no freshness check here (replays are caught by
delivery-id de-duplication). The delivery id is ``linear-delivery``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.rejections import Reason
from gateway.signatures.base import (
    SignatureError,
    Verified,
    hex_digest,
    hmac_sha256,
    required_header,
    utf8_key,
)

_SIGNATURE, _DELIVERY = "linear-signature", "linear-delivery"


class Linear:
    name = "linear"
    signature_headers: tuple[str, ...] = (_SIGNATURE,)
    delivery_id_headers: tuple[str, ...] = (_DELIVERY,)

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, _SIGNATURE)
        provided = hex_digest(header, "linear-signature header")
        if not hmac.compare_digest(provided, hmac_sha256(key, b"", body)):
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        return Verified(headers.get(_DELIVERY) or None)


SCHEME = Linear()
