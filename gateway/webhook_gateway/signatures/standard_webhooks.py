"""Standard Webhooks (https://www.standardwebhooks.com), which Svix also sends.

Headers ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``, or the ``svix-*``
aliases: the family is chosen by which signature header is present (``webhook-*`` first) and
all three headers are read from that family. Signed content is ``{id}.{timestamp}.`` + body;
the signature header holds space-separated ``v1,<base64 HMAC-SHA256>`` entries (several while
a secret rotates); other versions (``v1a,...``) are ignored. More than ``MAX_SIGNATURES``
entries, or a malformed ``v1`` entry, rejects the delivery.
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    MAX_SIGNATURES,
    SignatureError,
    Verified,
    base64_digest,
    check_timestamp,
    hmac_sha256,
)

_PREFIX = "whsec_"
# (id, timestamp, signature) header names of each family, in the order they are tried
_FAMILIES = (
    ("webhook-id", "webhook-timestamp", "webhook-signature"),
    ("svix-id", "svix-timestamp", "svix-signature"),
)
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


class StandardWebhooks:
    name = "standard_webhooks"
    signature_headers: tuple[str, ...] = tuple(name for family in _FAMILIES for name in family[1:])
    delivery_id_headers: tuple[str, ...] = tuple(family[0] for family in _FAMILIES)

    def prepare_key(self, secret: str) -> bytes:
        """``whsec_`` prefix (optional) then base64, decoded exactly as the official library."""
        secret = secret.strip()
        if secret.startswith(_PREFIX):
            secret = secret[len(_PREFIX) :]
        if not _BASE64_CHARS.issuperset(secret):
            raise ValueError("expected base64 after the whsec_ prefix")
        # like standardwebhooks.Webhook: tolerate missing padding (extra padding is skipped)
        key = base64.b64decode(secret + "==")
        if not key:
            raise ValueError("empty secret")
        return key

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        id_name, timestamp_name, signature_name = _FAMILIES[0]
        signature = headers.get(signature_name)
        if signature is None:
            id_name, timestamp_name, signature_name = _FAMILIES[1]
            signature = headers.get(signature_name)
        msg_id = headers.get(id_name)
        timestamp = headers.get(timestamp_name)
        if not signature:
            raise SignatureError("missing signature header", Reason.HEADER_MISSING)
        if not msg_id:
            raise SignatureError("missing id header", Reason.HEADER_MISSING)
        timestamp = check_timestamp(timestamp, now)
        entries = signature.split(None, MAX_SIGNATURES)
        if len(entries) > MAX_SIGNATURES:
            raise SignatureError("too many signatures", Reason.HEADER_MALFORMED)
        try:
            prefix = f"{msg_id}.{timestamp}.".encode("latin-1")
        except UnicodeEncodeError:
            raise SignatureError("malformed id header", Reason.HEADER_MALFORMED) from None
        expected = hmac_sha256(key, prefix, body)
        found = False
        for entry in entries:
            version, _, value = entry.partition(",")
            if version != "v1":
                continue
            found = True
            if hmac.compare_digest(base64_digest(value, "signature"), expected):
                return Verified(msg_id)
        if found:
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        raise SignatureError("no v1 signature", Reason.HEADER_MALFORMED)


SCHEME = StandardWebhooks()
