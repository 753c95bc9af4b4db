"""A lean HTTP/1.1 client for posting many small messages to few destinations (the event
sender): kept-alive connections per origin, each an asyncio protocol that parses the answer as
it arrives. It costs a fraction of httpx's CPU per call (httpcore's pool checks every pooled
connection on each request, through anyio; docs/performance.md, "Events out").

What it keeps from `outbound_client` (http.py): a connection goes to public addresses only
unless private ones are allowed (resolved and checked here, then connected to the checked
address), redirects are answers like any other, no proxy from the environment is used. What it
does: POST with the body and headers given, one overall timeout per call (connecting, sending,
answering), the answer's status, headers and the first `keep` bytes of its body; the rest of a
body up to MAX_DRAIN is read and dropped so the connection can serve the next call, a longer
one closes it. A kept connection the server closed meanwhile is replaced once, on a new
connection (the call is a delivery the receiver may see twice anyway: at least once).
Errors are httpx's, so a sender handles both clients alike.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx

from gateway.foundation.outbound.http import DEFAULT_TIMEOUT_S, check, resolve, tls_context

MAX_HEAD = 64 * 1024
MAX_DRAIN = 256 * 1024  # an answer's body read to its end to keep the connection, at most
KEEP_IDLE_S = 30.0  # an idle connection is closed when found older than this
MAX_IDLE = 64  # idle connections kept per origin
# what a request target keeps as it is; anything else is percent-encoded, as httpx does
_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
Origin = tuple[str, str, int]  # scheme, host, port


class Answer:
    """An HTTP answer: status, headers (names in lower case), the first bytes of the body."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class _Target:
    """A URL as the client sends to it, parsed once."""

    __slots__ = ("authorization", "head", "origin")

    def __init__(self, url: str, user_agent: str) -> None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"{url!r}: http or https only")
        host = parts.hostname
        if not host:
            raise httpx.LocalProtocolError(f"{url!r} has no host")
        default = 443 if scheme == "https" else 80
        port = parts.port or default
        self.origin: Origin = (scheme, host, port)
        name = f"[{host}]" if ":" in host else host.encode("idna").decode("ascii")
        authority = name if port == default else f"{name}:{port}"
        target = quote(parts.path or "/", safe=_SAFE)
        if parts.query:
            target += "?" + quote(parts.query, safe=_SAFE)
        self.authorization = None
        if parts.username is not None:  # credentials in the URL: basic auth, as httpx sends
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self.authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        self.head = f"POST {target} HTTP/1.1\r\nhost: {authority}\r\nuser-agent: {user_agent}\r\n"


class _Stale(Exception):
    """A kept connection closed before any byte of the answer came."""


class _Connection(asyncio.Protocol):
    """One connection; one call at a time. The answer is parsed in data_received."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[Answer] | None = None
        self._keep = 0

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection is out of step
            return
        self._buffer += data
        self._received = True
        try:
            self._parse(eof=False)
        except httpx.HTTPError as exc:
            self._fail(exc)

    def eof_received(self) -> bool:
        if self._waiter is not None and not self._waiter.done():
            if not self._received:
                self.connection_lost(None)  # closed before answering: maybe a stale one
                return False
            try:
                self._parse(eof=True)
            except httpx.HTTPError as exc:
                self._fail(exc)
        return False  # the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            if not self._received and self.reused:
                self._waiter.set_exception(_Stale())
            else:
                self._waiter.set_exception(
                    httpx.RemoteProtocolError("the server closed the connection mid-answer")
                    if self._received
                    else httpx.RemoteProtocolError("the server closed the connection unanswered")
                )

    # -- calls
    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def call(self, request: bytes, keep: int) -> Answer:
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._buffer = bytearray()
        self._received = False
        self._keep = keep
        self._stage = "head"
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body = bytearray()
        self._drained = 0
        self._left = 0
        self.reusable = False
        self.transport.write(request)
        try:
            return await self._waiter
        finally:
            self._waiter = None

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def _answer(self, reusable: bool) -> None:
        self.reusable = reusable and self._keep_alive and not self._buffer
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(Answer(self._status, self._headers, bytes(self._body)))

    def _take(self, chunk: bytes | bytearray) -> bool:
        """Body bytes: the first `keep` kept; False once past MAX_DRAIN (the rest not read)."""
        if len(self._body) < self._keep:
            self._body += chunk[: self._keep - len(self._body)]
        self._drained += len(chunk)
        return self._drained <= MAX_DRAIN

    def _read_counted(self, buffer: bytearray) -> str:
        """Up to `_left` body bytes taken from `buffer`: "over" past MAX_DRAIN, "more" while
        some are still to come, "done" once all are read."""
        chunk = buffer[: self._left]
        del buffer[: len(chunk)]
        self._left -= len(chunk)
        if not self._take(chunk):
            return "over"
        return "more" if self._left else "done"

    def _parse(self, eof: bool) -> None:
        buffer = self._buffer
        while True:
            stage = self._stage
            if stage == "head":
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise httpx.RemoteProtocolError("the answer's head is too long")
                    if eof:
                        raise httpx.RemoteProtocolError("closed mid-answer")
                    return
                head = bytes(buffer[:end]).decode("latin-1")
                del buffer[: end + 4]
                if self._head(head):
                    continue  # an informational answer (1xx): the real one follows
                if self._stage == "done":
                    self._answer(reusable=True)
                    return
            elif stage == "length":
                read = self._read_counted(buffer)
                if read != "more":
                    self._answer(reusable=read == "done")
                    return
                if eof:
                    raise _closed_mid_body()
                return
            elif stage == "close":
                rest = bytes(buffer)
                buffer.clear()
                if not self._take(rest) or eof:
                    self._answer(reusable=False)
                return
            elif stage == "chunk-size":
                end = buffer.find(b"\r\n")
                if end < 0:
                    if eof or len(buffer) > 1024:
                        raise httpx.RemoteProtocolError("a bad chunk in the answer's body")
                    return
                size_text = bytes(buffer[:end]).split(b";", 1)[0].strip()
                del buffer[: end + 2]
                try:
                    self._left = int(size_text, 16)
                except ValueError:
                    raise httpx.RemoteProtocolError("a bad chunk size in the answer") from None
                self._stage = "chunk" if self._left else "trailer"
            elif stage == "chunk":
                read = self._read_counted(buffer)
                if read == "over":
                    self._answer(reusable=False)
                    return
                if read == "more":
                    if eof:
                        raise _closed_mid_body()
                    return
                self._stage = "chunk-end"
            elif stage == "chunk-end":
                if len(buffer) < 2:
                    if eof:
                        raise _closed_mid_body()
                    return
                if buffer[:2] != b"\r\n":
                    raise httpx.RemoteProtocolError("a bad chunk in the answer's body")
                del buffer[:2]
                self._stage = "chunk-size"
            elif stage == "trailer":
                end = buffer.find(b"\r\n")
                if end < 0:
                    if eof:
                        raise _closed_mid_body()
                    return
                del buffer[: end + 2]
                if end == 0:
                    self._answer(reusable=True)
                    return
            else:
                return

    def _head(self, head: str) -> bool:
        """The status line and headers; True for an informational answer, to be skipped."""
        status_line, _, rest = head.partition("\r\n")
        version, _, tail = status_line.partition(" ")
        code = tail[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise httpx.RemoteProtocolError(f"not an HTTP/1 answer: {status_line[:100]!r}")
        status = int(code)
        if 100 <= status < 200:
            if status == 101:
                raise httpx.RemoteProtocolError("the server switched protocols")
            return True
        headers: dict[str, str] = {}
        for line in rest.split("\r\n") if rest else ():
            name, sep, value = line.partition(":")
            if not sep:
                raise httpx.RemoteProtocolError(f"a bad header line: {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
        self._status, self._headers = status, headers
        connection = headers.get("connection", "").lower()
        self._keep_alive = version == "HTTP/1.1" and "close" not in connection
        if status in (204, 304):
            self._stage = "done"
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._stage = "chunk-size"
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit():
                raise httpx.RemoteProtocolError(f"a bad content-length: {length[:40]!r}")
            self._left = int(length)
            self._stage = "length" if self._left else "done"
        else:
            self._stage = "close"  # the body runs to the end of the connection
        return False


class KeepAliveClient:
    """Posts to HTTP(S) URLs through kept-alive connections, one call per connection at a time
    (a destination gets as many connections as calls it has in flight; the dispatcher bounds
    those). `allow_private` is `settings.outbound_allow_private`."""

    def __init__(
        self,
        *,
        allow_private: bool,
        timeout: float = DEFAULT_TIMEOUT_S,
        user_agent: str = "gateway",
    ) -> None:
        self._allow_private, self._timeout = allow_private, timeout
        self._user_agent = user_agent
        self._idle: dict[Origin, list[_Connection]] = {}
        self._targets: dict[str, _Target] = {}
        self._busy: set[_Connection] = set()
        self._trimmed = time.monotonic()

    async def __aenter__(self) -> KeepAliveClient:
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.aclose()

    async def post(
        self,
        url: str,
        *,
        content: bytes,
        headers: Mapping[str, str],
        timeout: float | None = None,  # noqa: ASYNC109 (httpx's interface)
        keep: int = 1024,
    ) -> Answer:
        """POST `content` to `url`: the answer, with the first `keep` bytes of its body."""
        target = self._target(url)
        lines = [target.head]
        if target.authorization is not None:
            lines.append(f"authorization: {target.authorization}\r\n")
        for name, value in headers.items():
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise httpx.LocalProtocolError(f"a line break in the header {name!r}")
            lines.append(f"{name}: {value}\r\n")
        lines.append(f"content-length: {len(content)}\r\n\r\n")
        request = "".join(lines).encode("latin-1") + content
        phase = ["connect"]
        try:
            async with asyncio.timeout(self._timeout if timeout is None else timeout):
                return await self._call(target.origin, request, keep, phase)
        except TimeoutError:
            if phase[0] == "connect":
                raise httpx.ConnectTimeout(f"{url}: no connection in time") from None
            raise httpx.ReadTimeout(f"{url}: no answer in time") from None

    async def _call(self, origin: Origin, request: bytes, keep: int, phase: list[str]) -> Answer:
        connection = self._idle_connection(origin)
        if connection is None:
            connection = await self._connect(origin)
        for fresh in (False, True):
            self._busy.add(connection)
            phase[0] = "answer"
            try:
                answer = await connection.call(request, keep)
            except _Stale:
                connection.close()
                if fresh:  # pragma: no cover - a new connection is never reused
                    raise httpx.RemoteProtocolError("the server closed the connection") from None
                phase[0] = "connect"
                connection = await self._connect(origin)
                continue
            except BaseException:
                connection.close()  # out of step now (a timeout, a cancellation, an error)
                raise
            finally:
                self._busy.discard(connection)
            if connection.reusable and not connection.closed:
                self._keep_idle(origin, connection)
            else:
                connection.close()
            return answer
        raise AssertionError("unreachable")

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            if len(self._targets) > 10_000:
                self._targets.clear()
            target = self._targets[url] = _Target(url, self._user_agent)
        return target

    def _idle_connection(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            alive = not connection.closed and not connection.transport.is_closing()  # type: ignore[union-attr]
            if alive and now - connection.idle_since < KEEP_IDLE_S:
                connection.reused = True
                return connection
            connection.close()
        return None

    def _keep_idle(self, origin: Origin, connection: _Connection) -> None:
        now = time.monotonic()
        connection.idle_since = now
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= MAX_IDLE:
            connection.close()
        else:
            idle.append(connection)
        if now - self._trimmed > KEEP_IDLE_S:  # origins no longer called keep no connection
            self._trimmed = now
            for key, kept in list(self._idle.items()):
                for old in [c for c in kept if c.closed or now - c.idle_since >= KEEP_IDLE_S]:
                    kept.remove(old)
                    old.close()
                if not kept:
                    del self._idle[key]

    async def _connect(self, origin: Origin) -> _Connection:
        scheme, host, port = origin
        address = host
        if not self._allow_private:
            address = check(host, await resolve(host, port, None))  # within the call's timeout
        context = tls_context() if scheme == "https" else None
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(
                _Connection, address, port, ssl=context, server_hostname=host if context else None
            )
        except OSError as exc:  # ssl.SSLError included
            raise httpx.ConnectError(f"{host}:{port}: {exc}") from exc
        return connection

    async def aclose(self) -> None:
        for kept in self._idle.values():
            for connection in kept:
                connection.close()
        self._idle.clear()
        for connection in list(self._busy):
            connection.close()


def _closed_mid_body() -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError("the server closed the connection mid-body")
