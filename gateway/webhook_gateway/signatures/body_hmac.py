"""The shape most providers share: one header holding ``<prefix><hex HMAC(body)>``, keyed by the
secret as UTF-8, nothing else signed (GitHub, Jira, Linear, Sentry, Vercel).

With no signed timestamp there is no freshness check here; replays are caught by de-duplication
on the delivery id (or the body digest where the provider sends no id).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures.base import (
    SignatureError,
    Verified,
    hex_digest,
    hmac_of_body,
    required_header,
    utf8_key,
)

_DIGEST_SIZES = {"sha256": 32, "sha1": 20}
_UNIDENTIFIED = Verified(None)


class BodyHmac:
    """A scheme of that shape: its header, the text before the hex, the hash, the header with
    the provider's own delivery id (None when the provider sends none), and the headers that
    carry an unsigned timestamp (never checked; listed so none becomes a delivery id header)."""

    __slots__ = (
        "_algorithm",
        "_delivery",
        "_header",
        "_prefix",
        "_size",
        "_what",
        "delivery_id_headers",
        "name",
        "signature_headers",
    )

    def __init__(
        self,
        name: str,
        header: str,
        *,
        prefix: str = "",
        algorithm: str = "sha256",
        delivery: str | None = None,
        unsigned: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.signature_headers: tuple[str, ...] = (header, *unsigned)
        self.delivery_id_headers: tuple[str, ...] = () if delivery is None else (delivery,)
        self._header, self._prefix, self._delivery = header, prefix, delivery
        self._algorithm, self._size = algorithm, _DIGEST_SIZES[algorithm]
        self._what = f"{header} header"

    def prepare_key(self, secret: str) -> bytes:
        return utf8_key(secret)

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        header = required_header(headers, self._header)
        prefix = self._prefix
        if prefix:
            if not header.startswith(prefix):
                raise SignatureError(f"malformed {self._what}", Reason.HEADER_MALFORMED)
            header = header[len(prefix) :]
        provided = hex_digest(header, self._what, self._size)
        if not hmac.compare_digest(provided, hmac_of_body(key, body, self._algorithm)):
            raise SignatureError("no matching signature", Reason.SIGNATURE_MISMATCH)
        if self._delivery is None:
            return _UNIDENTIFIED
        return Verified(headers.get(self._delivery) or None)
