"""The request headers stored with an accepted delivery, credentials redacted.

Redacted (the value replaced, the name kept so the operator sees it was sent): every header
that may not name a delivery identity for the same reason (gateway/signatures/identity_headers:
Authorization, Cookie, each scheme's signature and timestamp headers, and names with token,
secret, signature, ... in them), and in url_token mode any value that contains the path token
(a proxy's X-Original-URI, a Referer). Bounded: a value is cut at MAX_VALUE characters and
headers past MAX_STORED bytes in total are left out (a request head may hold 32 KB).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from gateway.ingress.headers import RawHeaders
from gateway.signatures.identity_headers import identity_header_refusal

REDACTED = "[redacted]"
MAX_VALUE = 1024
MAX_STORED = 8192

# header name -> redact?; decided once per distinct name (bounded: names are sender-chosen)
_SECRET: dict[bytes, bool] = {}


def _is_secret(name: bytes) -> bool:
    secret = _SECRET.get(name)
    if secret is None:
        secret = identity_header_refusal(name.decode("latin-1")) is not None
        if len(_SECRET) < 4096:
            _SECRET[name] = secret
    return secret


def stored_headers(headers: Mapping[str, str], path_token: str | None = None) -> bytes:
    """The headers as one JSON object (names lower case), credentials redacted."""
    raw = headers.raw if isinstance(headers, RawHeaders) else _encoded(headers)
    kept: dict[str, str] = {}
    size = 0
    for name, value in raw.items():
        if _is_secret(name):
            text = REDACTED
        else:
            text = value[:MAX_VALUE].decode("latin-1")
            if path_token is not None and path_token in text:
                text = REDACTED
        size += len(name) + len(text)
        if size > MAX_STORED:
            break
        kept[name.decode("latin-1")] = text
    return orjson.dumps(kept)


def _encoded(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    return {k.lower().encode("latin-1"): v.encode("latin-1") for k, v in headers.items()}
