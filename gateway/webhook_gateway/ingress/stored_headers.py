"""The request headers stored with an accepted delivery, credentials redacted.

Redacted (the value replaced, the name kept so the operator sees it was sent): every header
that may not name a delivery identity for the same reason
(gateway/webhook_gateway/signatures/identity_headers: Authorization, Cookie, each scheme's signature
and timestamp headers, and names with token, secret, signature, ... in them), and in url_token mode
any value that contains the path token (a proxy's X-Original-URI, a Referer). Bounded: a value is
cut at MAX_VALUE bytes and headers past MAX_STORED bytes in total are left out (a request head may
hold 32 KB).

Stored as the header block of HTTP/1.1 (`name: value` lines joined by CRLF; a server refuses CR
and LF inside a value), raw bytes: joining bytes costs the request path a fraction of decoding
every header and encoding JSON. `backends.delivery_rows.headers_of` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.webhook_gateway.ingress.headers import RawHeaders
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal

REDACTED = b"[redacted]"
MAX_VALUE = 1024
MAX_STORED = 8192


def stored_headers(headers: Mapping[str, str], path_token: str | None = None) -> bytes:
    """The headers as an HTTP header block (names lower case), credentials redacted."""
    raw = headers.raw if isinstance(headers, RawHeaders) else _encoded(headers)
    token = None if path_token is None else path_token.encode("latin-1")
    # A sender sends the same header names every time: per tuple of names, a bytes template
    # ("host: %(host)b\r\nauthorization: [redacted]...") fills in the values kept with one
    # C-level format, ~3x cheaper than a Python loop over the headers
    names = tuple(raw)
    template = _TEMPLATES.get(names)
    if template is None:
        template = _template(names)
    if template:
        block: bytes = template % raw
        if len(block) <= MAX_STORED and (token is None or token not in block):
            return block
    return _bounded(raw, token)


# header names (in request order) -> their template (b"": names a template cannot hold);
# bounded, as names are sender-chosen
_TEMPLATES: dict[tuple[bytes, ...], bytes] = {}


def _template(names: tuple[bytes, ...]) -> bytes:
    lines: list[bytes] = []
    for name in names:
        if any(c in name for c in b"%()"):
            lines = []
            break
        secret = identity_header_refusal(name.decode("latin-1")) is not None
        lines.append(b"%b: %b" % (name, REDACTED if secret else b"%%(%b)b" % name))
    template = b"\r\n".join(lines)
    if len(_TEMPLATES) < 1024:
        _TEMPLATES[names] = template
    return template


def _bounded(raw: dict[bytes, bytes], token: bytes | None) -> bytes:
    """The slow path (long headers, the path token in a value, odd names): header by header."""
    lines = []
    size = 0
    for name, value in raw.items():
        if identity_header_refusal(name.decode("latin-1")) is not None or (
            token is not None and token in value
        ):
            value = REDACTED
        elif len(value) > MAX_VALUE:
            value = value[:MAX_VALUE]
        size += len(name) + len(value) + 4
        if size > MAX_STORED:
            break
        lines.append(b"%b: %b" % (name, value))
    return b"\r\n".join(lines)


def _encoded(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    return {k.lower().encode("latin-1"): v.encode("latin-1") for k, v in headers.items()}
