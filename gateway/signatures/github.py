"""GitHub: ``x-hub-signature-256: sha256=<hex HMAC-SHA256(body)>``, key = the secret as UTF-8.

GitHub signs no timestamp, so there is no freshness check (replays are caught by delivery-id
de-duplication). The delivery id is ``x-github-delivery`` when present.
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

_PREFIX = "sha256="
_SIGNATURE, _DELIVERY = "x-hub-signature-256", "x-github-delivery"


class GitHub:
    name = "github"
    signature_headers: tuple[str, ...] = (_SIGNATURE,)
    delivery_id_headers: tuple[str, ...] = (_DELIVERY,)

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, _SIGNATURE)
        if not header.startswith(_PREFIX):
            raise SignatureError("malformed x-hub-signature-256 header", Reason.HEADER_MALFORMED)
        provided = hex_digest(header[len(_PREFIX) :], "x-hub-signature-256 header")
        if not hmac.compare_digest(provided, hmac_sha256(key, b"", body)):
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        return Verified(headers.get(_DELIVERY) or None)


SCHEME = GitHub()
