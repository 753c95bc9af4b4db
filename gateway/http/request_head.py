"""Limits on the request head (request line and headers), which any stranger controls.

The HTTP server is the first line (gateway/http/http_server.py): it never buffers much more than
READ_BUFFER of a head (431; a body, even one in the same read, is not the head's) and drops a
sender whose head is not complete within the header deadline (GATEWAY_HEADER_TIMEOUT). Granian
does both itself; under uvicorn gateway/http/uvicorn_protocol.py adds them. The exact limits are
checked here, the same under every server, before routing: what the server let through is
refused (431 / 414) before any handler reads a header.
"""

from __future__ import annotations

from gateway.kernel.errors import HeadersTooLarge, UriTooLong
from gateway.kernel.problem import PROBLEM_CONTENT_TYPE, render
from gateway.kernel.types import ASGIApp, Receive, Scope, Send

MAX_HEADERS = 100  # header lines
MAX_HEADER_LINE = 16_384  # bytes of one header's name + value (a 10 KB delivery id fits)
MAX_HEADER_BYTES = 32_768  # bytes of all names + values together
MAX_TARGET = 8_192  # bytes of the request target (path + query)
# what the server reads of one head at most before refusing it (431): a head within every limit
# above, with its framing (": ", CRLF, request line), always fits. Granian's HTTP/1 buffer per
# connection (it may read up to one more buffer before it decides); bodies stream through it.
READ_BUFFER = MAX_HEADER_BYTES + MAX_TARGET + 8_192


def head_error(scope: Scope) -> HeadersTooLarge | UriTooLong | None:
    """The limit the request head breaks, or None."""
    headers = scope["headers"]
    if len(headers) > MAX_HEADERS:
        return HeadersTooLarge(f"headers: more than {MAX_HEADERS} header lines")
    total = 0
    for name, value in headers:
        size = len(name) + len(value)
        if size > MAX_HEADER_LINE:
            return HeadersTooLarge(f"headers: a header line over {MAX_HEADER_LINE} bytes")
        total += size
    if total > MAX_HEADER_BYTES:
        return HeadersTooLarge(f"headers: more than {MAX_HEADER_BYTES} bytes in all")
    target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    if target > MAX_TARGET:
        return UriTooLong(f"request target: longer than {MAX_TARGET} bytes")
    return None


def trailer_error(count: int, line: int, total: int) -> HeadersTooLarge | None:
    """The head's limit that the trailer fields of a chunked body break, checked one field at a
    time (`count` fields so far, `line` bytes of the newest one's name + value, `total` of all of
    them), or None. The server checks them (gateway/http/uvicorn_protocol.py): the app never sees
    trailers."""
    if count > MAX_HEADERS:
        return HeadersTooLarge(f"trailers: more than {MAX_HEADERS} field lines")
    if line > MAX_HEADER_LINE:
        return HeadersTooLarge(f"trailers: a field line over {MAX_HEADER_LINE} bytes")
    if total > MAX_HEADER_BYTES:
        return HeadersTooLarge(f"trailers: more than {MAX_HEADER_BYTES} bytes in all")
    return None


class HeadLimits:
    """Pure-ASGI guard in front of an app (the API alone, when this process serves no ingress;
    otherwise the ingress dispatcher checks the head itself): refuses an oversized head with a
    problem+json and closes the connection, so the sender cannot reuse it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state = getattr(app, "state", None)  # tests reach the services through app.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            error = head_error(scope)
            if error is not None:
                await refuse_head(send, error)
                return
        await self.app(scope, receive, send)


async def refuse_head(send: Send, error: HeadersTooLarge | UriTooLong) -> None:
    status, body, extra = render(error)
    headers = [
        (b"content-type", PROBLEM_CONTENT_TYPE),
        (b"content-length", b"%d" % len(body)),
        (b"connection", b"close"),
    ]
    headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
