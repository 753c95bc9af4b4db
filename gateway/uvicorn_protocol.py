"""uvicorn's httptools protocol with the request-head limits uvicorn lacks.

httptools keeps every byte of an unfinished head (one 64 MB header line cost 112 MB and stalled
the event loop while it was parsed), and uvicorn starts no clock before a head is complete (a
sender trickling one header line every few seconds holds its connection for ever). Here a head
may take READ_BUFFER bytes (then 431 and the connection is closed) and the header deadline
(then 408, or a silent close when nothing was sent). The exact limits (header count, line and
total size) are the app's (gateway/ingress/request_head.py).

One sweep per second closes overdue heads, so a request costs a time stamp, not a timer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.errors import HeadersTooLarge, RequestTimeout, ServiceError
from gateway.ingress.request_head import READ_BUFFER
from gateway.problem import PROBLEM_CONTENT_TYPE, render

SWEEP_S = 1.0
_STATUS = {408: b"408 Request Timeout", 431: b"431 Request Header Fields Too Large"}


class BoundedHttpTools(HttpToolsProtocol):
    header_timeout = 10.0  # set by gateway/http_server.py from GATEWAY_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_bytes = 0
        self.head_since: float | None = None  # loop time the unfinished head began, or None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_since = self.loop.time()  # a connection that sends nothing is overdue too
        _sweeper(self.loop, self.connections, self.header_timeout)

    def data_received(self, data: bytes) -> None:
        if self.head_since is not None:
            self.head_bytes += len(data)
            if self.head_bytes > READ_BUFFER:
                self.refuse(HeadersTooLarge(f"request head: more than {READ_BUFFER} bytes"))
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_since is None:
            self.head_since = self.loop.time()

    def on_headers_complete(self) -> None:
        self.head_since = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.head_bytes = 0  # the next head on this connection starts from nothing

    def refuse(self, error: ServiceError) -> None:
        """Answer `error` and close; the parser is not fed again."""
        self.head_since = None
        if self.transport.is_closing():
            return
        status, body, _ = render(error)
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % (_STATUS[status], PROBLEM_CONTENT_TYPE, len(body))
            + body
        )
        self.transport.close()

    def overdue(self) -> None:
        if self.head_bytes:
            self.refuse(RequestTimeout("request head: not received in time"))
        elif not self.transport.is_closing():
            self.head_since = None
            self.transport.close()


_SWEEPING: set[asyncio.AbstractEventLoop] = set()


def _sweeper(loop: asyncio.AbstractEventLoop, connections: set[Any], timeout: float) -> None:
    """Once per event loop: every SWEEP_S, close the connections whose head is overdue."""
    if loop in _SWEEPING:
        return
    _SWEEPING.add(loop)

    def sweep() -> None:
        now = loop.time()
        for conn in list(connections):
            since = getattr(conn, "head_since", None)
            if since is not None and now - since >= timeout:
                conn.overdue()
        loop.call_later(SWEEP_S, sweep)

    loop.call_later(SWEEP_S, sweep)
