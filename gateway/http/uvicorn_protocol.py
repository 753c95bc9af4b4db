"""uvicorn's httptools protocol with the bounds uvicorn lacks on what a sender controls.

- **The request head.** httptools keeps every byte of an unfinished head (one 64 MB header line
  cost 112 MB and stalled the event loop while it was parsed), and uvicorn starts no clock before
  a head is complete (a sender trickling one header line every few seconds holds its connection
  for ever). Here a head may take READ_BUFFER bytes (then 431 and the connection is closed) and
  the header deadline (then 408, or a silent close when nothing of a request was sent).
- **Trailers** (the field lines after a chunked body's last chunk). uvicorn appends them to the
  request's headers, without limit, where the app reads them as if the head had sent them. Here
  they are bounded like a head (bytes, deadline, and the head's line limits: 431 / 408) and
  dropped: the app only ever sees the head's headers.
- **The rest of a body after an early answer** (404, 413, 408 while the body still arrives).
  uvicorn reads and discards it for as long as the sender sends. Here it gets the body deadline
  from the answer, then the connection is closed.
- **An idle connection** (between requests). uvicorn arms a keep-alive timer after every
  response, and any bytes, blank lines too, stop it. Here the connection is idle until the next
  request begins, for the keep-alive timeout (swept like the rest: no timer per request).

Only bytes of an unfinished head (or trailer section) count, never the body that arrives in the
same read: a read is counted when one and the same section was open before and after it, so the
parser, not a scan for the blank line (which may straddle two reads), says where a head ends. A
section that began inside a read is not charged for that read, so a head holds at most
READ_BUFFER plus two reads (uvloop reads up to 256 KB at a time) when it is refused.

The exact limits (header count, line and total size) are the app's
(gateway/http/request_head.py). One sweep per second closes overdue connections, so a request
costs two time stamps (it begins; its connection goes idle), not a timer.
"""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.http.request_head import READ_BUFFER, trailer_error
from gateway.http.response_writes import OneWriteResponses
from gateway.kernel.errors import HeadersTooLarge, RequestTimeout, ServiceError
from gateway.kernel.logs import counting_access_logger as _access_logger
from gateway.kernel.problem import PROBLEM_CONTENT_TYPE, render

SWEEP_S = 1.0

# The private code of uvicorn (uvicorn.protocols.http.httptools_impl) this module and
# gateway/http/response_writes.py follow: the methods BoundedHttpTools overrides, calls or stands in
# for (on_response_complete is a copy of uvicorn's; refuse does what connection_lost does) and
# what a request's cycle does with its transport. pyproject.toml pins the uvicorn versions they
# were checked against; tests/test_uvicorn_pin.py compares a digest of their source with
# FOLLOWED_DIGEST and fails, naming what to re-check, when an upgrade changes any of them.
FOLLOWED: dict[str, tuple[str, ...]] = {
    "HttpToolsProtocol": (
        "__init__",
        "connection_made",
        "connection_lost",
        "_unset_keepalive_if_required",
        "data_received",
        "on_message_begin",
        "on_header",
        "on_headers_complete",
        "_start_asgi_task",
        "on_body",
        "on_message_complete",
        "on_response_complete",
        "timeout_keep_alive_handler",
    ),
    "RequestResponseCycle": ("__init__", "send", "receive"),
}
FOLLOWED_VERSION = "0.54.0"  # the uvicorn whose source FOLLOWED_DIGEST is of
FOLLOWED_DIGEST = "4a13d3d9f647f68ebdd3834cc1c05faebe14c9d0167b763a08e3293b8a859bc9"
_STATUS = {408: b"408 Request Timeout", 431: b"431 Request Header Fields Too Large"}


class Section(Enum):
    """What a connection is reading under the head's bounds (BoundedHttpTools.section)."""

    IDLE = "idle"  # nothing of the next request has arrived: overdue is a silent close
    HEAD = "request head"
    TRAILERS = "request trailers"  # from a chunk's size line until its data (not the last one)


IDLE, HEAD, TRAILERS = Section


_Base = HttpToolsProtocol  # its methods called directly: cheaper than super() per request


class BoundedHttpTools(HttpToolsProtocol):
    header_timeout = 10.0  # set by gateway/http/http_server.py from GATEWAY_HEADER_TIMEOUT
    body_timeout = 10.0  # and GATEWAY_BODY_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.access_log:  # the calls the access log counts build no record (kernel/logs.py)
            self.access_logger = _access_logger(self.access_logger)  # type: ignore[assignment]
        self.section: Section | None = None
        # when the open section is due: a float object of its own, which also tells one section
        # from the next (data_received); None when no section is open
        self.section_due: float | None = None
        self.section_bytes = 0
        self.drain_due: float | None = None  # when the rest of an answered body is due
        self.trailer_fields = TrailerFields(self)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.responses = OneWriteResponses(transport, self.loop)
        self.open_section(IDLE)  # a connection that sends nothing is overdue too
        _sweeper(self.loop, self.connections)

    def data_received(self, data: bytes) -> None:
        section = self.section_due
        _Base.data_received(self, data)
        if section is not None and self.section_due is section:
            # the whole read belonged to one section, still unfinished
            self.section_bytes += len(data)
            if self.section_bytes > READ_BUFFER:
                self.refuse(HeadersTooLarge(f"{self.section_name}: more than {READ_BUFFER} bytes"))

    def open_section(self, section: Section) -> None:
        self.section = section
        self.section_due = self.loop.time() + self.header_timeout
        self.section_bytes = 0

    @property
    def section_name(self) -> str:
        return TRAILERS.value if self.section is TRAILERS else HEAD.value

    # parser callbacks, in the order a request brings them

    def on_message_begin(self) -> None:
        _Base.on_message_begin(self)
        # open_section(HEAD), written out: this and the idle section below run per request
        self.section = HEAD
        self.section_due = self.loop.time() + self.header_timeout
        self.section_bytes = 0

    def on_headers_complete(self) -> None:
        self.section = self.section_due = None
        _Base.on_headers_complete(self)
        cycle = self.cycle  # the new request's (an upgrade request makes none: still the last)
        if cycle is not None:
            cycle.transport = self.responses  # type: ignore[assignment]

    def on_chunk_header(self) -> None:
        """A chunk's size line: its data follows, or (the last chunk) the trailer section."""
        if self.headers is not self.trailer_fields:  # this message's first chunk
            self.headers = self.trailer_fields  # uvicorn's on_header appends trailers to it
            self.trailer_fields.lines = self.trailer_fields.size = 0
        if self.section_due is None:
            self.open_section(TRAILERS)

    def on_body(self, body: bytes) -> None:
        if self.section is TRAILERS:  # data after a chunk's size line: not the last chunk
            self.section = self.section_due = None
        _Base.on_body(self, body)

    def on_message_complete(self) -> None:
        self.section = self.section_due = None
        drained = self.drain_due is not None
        _Base.on_message_complete(self)
        if drained:  # answered before its body was complete: the connection is idle from here
            self.drain_due = None
            self.keep_alive()

    def keep_alive(self) -> None:
        """Idle until the next request, for uvicorn's keep-alive timeout at most, whether
        nothing arrives or bytes that begin no request (blank lines)."""
        self.section = IDLE
        self.section_due = self.loop.time() + self.timeout_keep_alive
        self.section_bytes = 0

    def on_response_complete(self) -> None:
        """uvicorn's (as of 0.54), without its keep-alive timer (one armed and cancelled per
        request, ~2 µs of the loop's time): an idle connection is a section of its own, which
        the sweep closes once the keep-alive timeout has passed."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:  # requests read while this one was answered: the next one's turn
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        cycle = self.cycle
        if not cycle.response_complete:
            return
        if cycle.more_body:
            # an early answer: the sender may go on sending the body for a while, not for ever
            self.drain_due = self.loop.time() + self.body_timeout
        elif self.section_due is None:
            self.keep_alive()

    # bounds

    def on_trailer(self, name: bytes, value: bytes) -> None:
        fields = self.trailer_fields
        line = len(name) + len(value)
        fields.lines += 1
        fields.size += line
        error = trailer_error(fields.lines, line, fields.size)
        if error is not None:
            self.refuse(error)

    def section_overdue(self) -> None:
        if self.section is IDLE:
            self.refuse(None)
        else:
            self.refuse(RequestTimeout(f"{self.section_name}: not received in time"))

    def refuse(self, error: ServiceError | None) -> None:
        """Answer `error` (None: nothing) unless another answer is owed first, then close the
        connection. Called from a parser callback, the rest of the read is parsed for nothing."""
        section = self.section
        self.section = self.section_due = self.drain_due = None
        transport = self.transport
        if transport.is_closing():
            return
        cycle = self.cycle
        if section is TRAILERS:  # the request being read has an app waiting for its body
            answer = not cycle.response_started and not self.pipeline
        else:  # the head of a request no app has seen yet
            answer = cycle is None or cycle.response_complete
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # as when the connection is lost: its app sends nothing
            cycle.message_event.set()
        responses = self.responses  # after what a cycle wrote, and closed once that is out
        if answer and error is not None:
            status, body, _ = render(error)
            responses.write(
                b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close"
                b"\r\n\r\n" % (_STATUS[status], PROBLEM_CONTENT_TYPE, len(body)) + body
            )
        responses.close()


class TrailerFields(list[tuple[bytes, bytes]]):
    """What uvicorn's on_header appends a chunked body's trailer fields to, in place of the
    request's headers: each is checked against the head's limits, then dropped."""

    def __init__(self, protocol: BoundedHttpTools) -> None:
        super().__init__()
        self.protocol = protocol
        self.lines = 0
        self.size = 0

    def append(self, field: tuple[bytes, bytes]) -> None:
        self.protocol.on_trailer(*field)


_SWEEPING: set[asyncio.AbstractEventLoop] = set()


def _sweeper(loop: asyncio.AbstractEventLoop, connections: set[Any]) -> None:
    """Once per event loop: every SWEEP_S, close the connections whose section or drain is
    overdue."""
    if loop in _SWEEPING:
        return
    _SWEEPING.add(loop)

    def sweep() -> None:
        now = loop.time()
        for conn in list(connections):
            due = getattr(conn, "section_due", None)
            if due is not None and now >= due:
                conn.section_overdue()
            due = getattr(conn, "drain_due", None)
            if due is not None and now >= due:
                conn.refuse(None)
        loop.call_later(SWEEP_S, sweep)

    loop.call_later(SWEEP_S, sweep)
