"""Linear: ``linear-signature: <hex HMAC-SHA256(body)>``, key = the secret as UTF-8; the delivery
id is ``linear-delivery``.

Linear's only timestamp is ``webhookTimestamp`` (Unix milliseconds) inside the signed JSON body.
``SCHEME`` (custom webhooks) checks the signature alone: the gateway parses no JSON for a custom
webhook before authenticating it, and replays are caught by delivery-id de-duplication.
``FRESH`` (provider connections) also parses the verified body and refuses a ``webhookTimestamp``
more than ``FRESHNESS_MS`` from now, as Linear's own verifier (``@linear/sdk``) does, and hands the
parsed body on so it is parsed once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import orjson

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import SignatureError, Verified
from gateway.webhook_gateway.signatures.body_hmac import BodyHmac

# Linear's documented window, both ways (`LinearWebhookClient.verify` in @linear/sdk)
FRESHNESS_MS = 60_000
TIMESTAMP_FIELD = "webhookTimestamp"

SCHEME = BodyHmac("linear", "linear-signature", delivery="linear-delivery")


def check_webhook_timestamp(payload: object, now: float) -> None:
    """The verified body's ``webhookTimestamp`` is within ``FRESHNESS_MS`` of ``now`` (seconds)."""
    stamp = payload.get(TIMESTAMP_FIELD) if isinstance(payload, dict) else None
    if stamp is None:
        raise SignatureError("missing webhookTimestamp", Reason.HEADER_MISSING)
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp):
        raise SignatureError("malformed webhookTimestamp", Reason.HEADER_MALFORMED)
    now_ms = now * 1000
    if stamp < now_ms - FRESHNESS_MS:
        raise SignatureError("webhookTimestamp too old", Reason.TIMESTAMP_STALE)
    if not stamp <= now_ms + FRESHNESS_MS:  # also rejects a NaN clock
        raise SignatureError("webhookTimestamp in the future", Reason.TIMESTAMP_FUTURE)


class FreshLinear:
    """Linear's signature, then its signed ``webhookTimestamp``."""

    name = "linear"
    signature_headers = SCHEME.signature_headers
    delivery_id_headers = SCHEME.delivery_id_headers

    def prepare_key(self, secret: str) -> bytes:
        return SCHEME.prepare_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        signed = SCHEME.verify(key, headers, body, now)
        try:  # only now, with the signature checked, is the body parsed
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise SignatureError("missing webhookTimestamp", Reason.HEADER_MISSING) from None
        check_webhook_timestamp(payload, now)
        return Verified(signed.delivery_id, payload)


FRESH = FreshLinear()
