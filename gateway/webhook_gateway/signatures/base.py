"""The one interface every signature scheme implements, and the helpers they share.

A scheme is pure CPU work on raw bytes: no I/O, no framework types, no JSON parsing. Every
failure -- missing or malformed header, bad timestamp, no matching signature -- is a
:class:`SignatureError`; nothing else escapes ``verify``.

Header values are the ingress's latin-1 decoding of the raw header bytes, so ``.encode("latin-1")``
gives back exactly the bytes the provider sent (and signed).
"""

from __future__ import annotations

import binascii
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gateway.kernel.rejections import Reason

try:  # OpenSSL's HMAC without the `hmac` module's Python wrapper object: ~0.8 µs a request less
    from _hashlib import hmac_new as _hmac_new
except ImportError:  # a Python built without OpenSSL
    _hmac_new = hmac.new  # type: ignore[assignment]

# Both ways: older than this, or this far in the future, is rejected.
TOLERANCE_SECONDS = 300
# At most this many signature entries in one header; a header with more is rejected outright.
MAX_SIGNATURES = 10
# A Unix timestamp in seconds has 10 digits until the year 2286; anything longer is garbage.
_MAX_TIMESTAMP_DIGITS = 12


class SignatureError(Exception):
    """Verification failed; ``str`` is a short reason safe to log (never the secret), and
    ``reason`` its code for the delivery log (gateway/kernel/rejections.py)."""

    def __init__(self, message: str, reason: Reason) -> None:
        super().__init__(message)
        self.reason = reason


class Headers(Protocol):
    """Request headers by lower-case name (a plain ``dict[str, str]`` satisfies it)."""

    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Verified:
    """A delivery whose signature checked out."""

    delivery_id: str | None  # the provider's own delivery id header, when the scheme has one
    # the body as parsed JSON, when verifying had to parse it (a timestamp signed inside the
    # body): the caller need not parse it again
    payload: object = None


class SignatureScheme(Protocol):
    name: str
    # every header that carries the signature or a timestamp of the request, read by `verify`
    # or not (never a delivery id: a webhook's delivery id header may not name one of these)
    signature_headers: tuple[str, ...]
    # the provider's own delivery id headers `verify` reads and returns, if any
    delivery_id_headers: tuple[str, ...]

    def prepare_key(self, secret: str) -> bytes:
        """Secret as configured -> HMAC key; ``ValueError`` on an unusable secret.

        Called once when the webhook configuration loads, never per request."""
        ...

    def verify(self, key: bytes, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
        """Check one delivery (``headers`` by lower-case name, ``now`` in Unix seconds).

        Raises :class:`SignatureError` and nothing else."""
        ...


def hmac_sha256(key: bytes, head: bytes, body: bytes) -> bytes:
    """HMAC-SHA256(key, head + body) without concatenating, in OpenSSL. Keys stay plain bytes:
    keeping each key's padded hash states (saving ~0.2 µs a request) cost ~0.7 kB a webhook."""
    mac = _hmac_new(key, head, "sha256")
    mac.update(body)
    return mac.digest()


def hmac_of_body(key: bytes, body: bytes, algorithm: str) -> bytes:
    """HMAC(key, body) in OpenSSL with `algorithm` ("sha256", "sha1"), in one call."""
    return _hmac_new(key, body, algorithm).digest()


def utf8_key(secret: str) -> bytes:
    """The secret's UTF-8 bytes, used as-is (no prefix stripping, no trimming)."""
    if not secret:
        raise ValueError("empty secret")
    return secret.encode("utf-8")  # UnicodeEncodeError (a ValueError) on surrogates


def required_header(headers: Mapping[str, str], name: str) -> str:
    """The value of header `name` (lower case); a missing or empty one fails verification."""
    value = headers.get(name)
    if not value:
        raise SignatureError(f"missing {name} header", Reason.HEADER_MISSING)
    return value


def check_timestamp(value: str | None, now: float) -> str:
    """A decimal Unix-seconds timestamp within the tolerance of ``now``; returns it unchanged."""
    if not value:
        raise SignatureError("missing timestamp", Reason.HEADER_MISSING)
    if len(value) > _MAX_TIMESTAMP_DIGITS or not (value.isascii() and value.isdigit()):
        raise SignatureError("malformed timestamp", Reason.HEADER_MALFORMED)
    ts = int(value)
    if ts < now - TOLERANCE_SECONDS:
        raise SignatureError("timestamp too old", Reason.TIMESTAMP_STALE)
    if not ts <= now + TOLERANCE_SECONDS:  # also rejects a NaN clock
        raise SignatureError("timestamp in the future", Reason.TIMESTAMP_FUTURE)
    return value


def hex_digest(value: str, what: str, size: int = 32) -> bytes:
    """A hex signature of a `size`-byte digest (SHA-256 by default) -> its raw bytes."""
    if len(value) != 2 * size:
        raise SignatureError(f"malformed {what}", Reason.HEADER_MALFORMED)
    try:
        return binascii.a2b_hex(value)
    except ValueError:  # binascii.Error, or a non-ASCII str
        raise SignatureError(f"malformed {what}", Reason.HEADER_MALFORMED) from None


def base64_digest(value: str, what: str) -> bytes:
    """A 44-character padded base64 SHA-256 signature -> its 32 raw bytes."""
    if len(value) != 44:
        raise SignatureError(f"malformed {what}", Reason.HEADER_MALFORMED)
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except ValueError:  # binascii.Error, or a non-ASCII str
        raise SignatureError(f"malformed {what}", Reason.HEADER_MALFORMED) from None
