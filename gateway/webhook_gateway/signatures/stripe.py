"""Stripe: ``stripe-signature: t=<unix>,v1=<hex>[,v1=<hex>...][,v0=<hex>]``.

Signed payload ``{t}.`` + body, HMAC-SHA256 keyed by the whole ``whsec_...`` string as UTF-8
(Stripe does not base64-decode it). Any ``v1`` may match (Stripe sends several while a secret
rolls); ``v0`` and unknown keys are ignored. Unlike the ``stripe`` library, a timestamp more
than the tolerance in the future is rejected too. At most one ``t`` and ``MAX_SIGNATURES``
other entries. No delivery id: Stripe's event id is in the body.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    MAX_SIGNATURES,
    SignatureError,
    Verified,
    check_timestamp,
    hex_digest,
    hmac_sha256,
    required_header,
    utf8_key,
)

_UNVERIFIED = Verified(None)
_SIGNATURE = "stripe-signature"


class Stripe:
    name = "stripe"
    signature_headers: tuple[str, ...] = (_SIGNATURE,)
    delivery_id_headers: tuple[str, ...] = ()

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, _SIGNATURE)
        items = header.split(",", MAX_SIGNATURES + 1)
        if len(items) > MAX_SIGNATURES + 1:
            raise SignatureError("too many signatures", Reason.HEADER_MALFORMED)
        timestamp: str | None = None
        signatures: list[str] = []
        for item in items:
            name, sep, value = item.partition("=")
            if not sep:
                raise SignatureError("malformed stripe-signature header", Reason.HEADER_MALFORMED)
            if name == "t":
                if timestamp is not None:
                    raise SignatureError(
                        "malformed stripe-signature header", Reason.HEADER_MALFORMED
                    )
                timestamp = value
            elif name == "v1":
                signatures.append(value)
        timestamp = check_timestamp(timestamp, now)
        if not signatures:
            raise SignatureError("no v1 signature", Reason.HEADER_MALFORMED)
        expected = hmac_sha256(key, timestamp.encode() + b".", body)
        for value in signatures:
            if hmac.compare_digest(hex_digest(value, "signature"), expected):
                return _UNVERIFIED
        raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)


SCHEME = Stripe()
