"""PagerDuty (v3 webhooks): ``x-pagerduty-signature: v1=<hex HMAC-SHA256(body)>[,v1=<hex>...]``,
key = the subscription's secret as UTF-8.

PagerDuty sends one ``v1`` entry per signing secret while a secret rotates; any may match, and
entries of other versions are ignored. Entries are split on ``,`` with no spaces, as PagerDuty's
own verifiers split them. At most ``MAX_SIGNATURES`` entries; a malformed ``v1`` entry rejects
the delivery. No timestamp is signed. The delivery id is ``x-webhook-id``, the same on every
attempt of a delivery.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    MAX_SIGNATURES,
    SignatureError,
    Verified,
    hex_digest,
    hmac_of_body,
    required_header,
    utf8_key,
)

_PREFIX = "v1="
_SIGNATURE, _DELIVERY = "x-pagerduty-signature", "x-webhook-id"


class PagerDuty:
    name = "pagerduty"
    signature_headers: tuple[str, ...] = (_SIGNATURE,)
    delivery_id_headers: tuple[str, ...] = (_DELIVERY,)

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        entries = required_header(headers, _SIGNATURE).split(",", MAX_SIGNATURES)
        if len(entries) > MAX_SIGNATURES:
            raise SignatureError("too many signatures", Reason.HEADER_MALFORMED)
        expected: bytes | None = None
        for entry in entries:
            if not entry.startswith(_PREFIX):
                continue
            provided = hex_digest(entry[len(_PREFIX) :], "signature")
            if expected is None:
                expected = hmac_of_body(key, body, "sha256")
            if hmac.compare_digest(provided, expected):
                return Verified(headers.get(_DELIVERY) or None)
        if expected is None:
            raise SignatureError("no v1 signature", Reason.HEADER_MALFORMED)
        raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)


SCHEME = PagerDuty()
