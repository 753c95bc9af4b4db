"""A lean, pipelined Redis client for the hot-path scripts only (redis-py does everything else).

One asyncio Protocol connection; requests are written as they come and replies matched to them in
FIFO order with a hiredis Reader, so concurrent requests share one socket without a pool or a
lock. Scripts are loaded on every (re)connect and again on NOSCRIPT. A watchdog closes the
connection when the oldest reply is overdue, which fails every pending call (fail closed); the
next call reconnects, after a short back-off when connecting fails.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

import hiredis

from gateway.foundation.backends.lua_scripts import sha1


class RedisUnavailable(Exception):
    """Redis cannot be reached, timed out, or refused the command."""


class NotSent(RedisUnavailable):
    """The command never left this process (no connection, reconnect back-off): Redis did not
    run it."""


class ReplyLost(RedisUnavailable):
    """The command was sent, but the connection was lost or the reply was overdue before it came:
    Redis may have run it (or may still)."""


class ReplyError(RedisUnavailable):
    """Redis answered with an error (out of memory, unknown script...): it did not run the
    command's writes (the scripts refuse before their first write)."""


def is_noscript(exc: ReplyError) -> bool:
    """Redis does not know the script (restarted, or its script cache was flushed)."""
    return str(exc).startswith("NOSCRIPT")


class ScriptClient(Protocol):
    """What the Redis ingress backend needs of a client: RespClient for one Redis node,
    ClusterRespClient (resp_cluster.py) for a Cluster. `slot` is the hash slot of the keys the
    command names; a single-node client ignores it."""

    routes_by_slot: bool

    def send_now(self, command: bytes, slot: int, on_reply: OnReply) -> bool: ...

    async def script(
        self, command: bytes, *, before: Sequence[bytes] = (), slot: int = 0
    ) -> Any: ...

    async def evalsha(
        self, sha: str, keys: Sequence[bytes | str], args: Sequence[bytes | str | int]
    ) -> Any: ...

    async def close(self) -> None: ...


ASKING = b"*1\r\n$6\r\nASKING\r\n"

# called with the reply, or with the RedisUnavailable that stands for it
OnReply = Callable[[Any], None]


class _ReplyCallback:
    """A pending reply handed to a function the moment it is read, where a future would wake
    its waiter one loop turn later (a future's callbacks always go through call_soon)."""

    __slots__ = ("_on_reply",)

    def __init__(self, on_reply: OnReply) -> None:
        self._on_reply = on_reply

    def done(self) -> bool:
        return False

    def set_result(self, reply: Any) -> None:
        self._on_reply(reply)

    def set_exception(self, exc: BaseException) -> None:
        self._on_reply(exc)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Marks a reply nobody awaits as seen (ASKING's), so that its error is not logged."""
    if not future.cancelled():
        future.exception()


def bulk(arg: bytes | str | int) -> bytes:
    """One RESP bulk string."""
    data = arg if arg.__class__ is bytes else str(arg).encode()
    return b"$%d\r\n%b\r\n" % (len(data), data)


def array_head(count: int) -> bytes:
    return b"*%d\r\n" % count


def encode_command(args: Sequence[bytes | str | int]) -> bytes:
    return array_head(len(args)) + b"".join([bulk(arg) for arg in args])


def command_parts(
    head: Sequence[bytes | str | int], large: bytes, tail: Sequence[bytes | str | int]
) -> tuple[bytes, bytes, bytes]:
    """One command as three pieces around a large bulk argument, which is left uncopied."""
    count = len(head) + 1 + len(tail)
    before = array_head(count) + b"".join([bulk(arg) for arg in head]) + b"$%d\r\n" % len(large)
    return before, large, b"\r\n" + b"".join([bulk(arg) for arg in tail])


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reader = hiredis.Reader()
        self.pending: deque[tuple[asyncio.Future[Any] | _ReplyCallback, float]] = deque()
        self.closed = False
        self._out: list[bytes] = []
        self._out_large = False  # a large piece is queued: hand the pieces over without joining
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but they quack alike
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            future, _ = self.pending.popleft()
            if future.done():
                continue
            if isinstance(reply, hiredis.ReplyError):
                future.set_exception(ReplyError(str(reply)))
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        while self.pending:
            future, _ = self.pending.popleft()
            if not future.done():
                future.set_exception(ReplyLost(f"connection lost: {exc or 'closed'}"))

    def send(self, payload: bytes) -> asyncio.Future[Any]:
        """Queue one command (or `payload` of several, see send_many); its reply's future."""
        if self.closed or self.transport is None:
            raise NotSent("connection closed")
        future = self._loop.create_future()
        self.pending.append((future, time.monotonic()))
        # coalesce: everything written in this event-loop turn leaves in one send() syscall
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(payload)
        return future

    def send_now(self, payload: bytes, on_reply: OnReply) -> None:
        """Write one command at once (after whatever this turn queued before it); `on_reply`
        gets its reply as soon as it is read."""
        if self.closed or self.transport is None:
            raise NotSent("connection closed")
        self.pending.append((_ReplyCallback(on_reply), time.monotonic()))
        if self._out:  # commands queued earlier in this turn leave first
            self._out.append(payload)
        else:
            self.transport.write(payload)

    def send_parts(self, parts: Sequence[bytes]) -> asyncio.Future[Any]:
        """Queue one command given in pieces (a large body among them is never copied)."""
        future = self.send(parts[0])
        self._out.extend(parts[1:])
        self._out_large = True
        return future

    def send_many(self, payload: bytes, count: int) -> list[asyncio.Future[Any]]:
        first = self.send(payload)
        now = time.monotonic()
        more = [self._loop.create_future() for _ in range(count - 1)]
        self.pending.extend((f, now) for f in more)
        return [first, *more]

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self.transport is None or self.closed:
            return
        if self._out_large:  # writev of the pieces: no copy of a large body
            self._out_large = False
            self.transport.writelines(out)
        else:
            self.transport.write(b"".join(out))


class RespClient:
    routes_by_slot = False

    def __init__(self, url: str, *, timeout: float = 2.0, scripts: Sequence[str] = ()) -> None:
        self._url = url
        self._timeout = timeout
        self._scripts = {sha1(s): s for s in scripts}
        self._conn: _Protocol | None = None
        self._connecting: asyncio.Lock | None = None
        self._retry_at = 0.0
        self._watchdog: asyncio.Task[None] | None = None

    async def evalsha(
        self, sha: str, keys: Sequence[bytes | str], args: Sequence[bytes | str | int]
    ) -> Any:
        return await self.script(encode_command(["EVALSHA", sha, len(keys), *keys, *args]))

    def send_now(self, command: bytes, slot: int, on_reply: OnReply) -> bool:
        """The request path's EVALSHA, written at once on a live connection, its reply handed
        to `on_reply` as it is read (no future, no coroutine in between); False, nothing sent,
        when there is no live connection: the caller goes through `script`, which connects.
        A NOSCRIPT reply is the caller's to retry through `script`."""
        conn = self._conn
        if conn is None or conn.closed:
            return False
        conn.send_now(command, on_reply)
        return True

    async def script(
        self,
        command: bytes,
        *,
        before: Sequence[bytes] = (),
        slot: int = 0,
        asking: bool = False,
    ) -> Any:
        """Run an encoded EVALSHA of a registered script; `before`, one encoded command (in
        pieces, see `command_parts`) sent in the same write just ahead of it (its reply is not
        returned: the script checks what it needs of it). On NOSCRIPT (Redis restarted or
        flushed its script cache) load the scripts again and retry once, `before` included.
        `asking`: each command is preceded by ASKING (a Cluster slot being migrated here)."""
        try:
            return await self._call(command, before, asking)
        except ReplyError as exc:
            if not is_noscript(exc):
                raise
        for source in self._scripts.values():
            await self._call(encode_command(["SCRIPT", "LOAD", source]))
        return await self._call(command, before, asking)

    async def execute(self, *args: bytes | str | int) -> Any:
        return await self._call(encode_command(args))

    async def _call(
        self, command: bytes, before: Sequence[bytes] = (), asking: bool = False
    ) -> Any:
        conn = self._conn
        if conn is None or conn.closed:
            conn = await self._connect()
        if asking:  # ASKING holds for the one command after it
            conn.send(ASKING).add_done_callback(_retrieve)
            if before:
                conn.send_parts(before).add_done_callback(_retrieve)
                conn.send(ASKING).add_done_callback(_retrieve)
            return await conn.send(command)
        if not before:
            return await conn.send(command)
        first, reply = conn.send_parts(before), conn.send(command)  # one write: same loop turn
        try:
            return await reply
        finally:  # replies come in order: `first` is settled; mark its error as seen
            if first.done() and not first.cancelled():
                first.exception()

    async def _connect(self) -> _Protocol:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            if time.monotonic() < self._retry_at:
                raise NotSent("reconnect back-off")
            try:
                conn = await asyncio.wait_for(self._open(), self._timeout)
            except (OSError, TimeoutError, RedisUnavailable) as exc:
                self._retry_at = time.monotonic() + 0.2
                raise NotSent(f"cannot connect: {exc}") from exc
            self._conn = conn
            if self._watchdog is None or self._watchdog.done():
                self._watchdog = asyncio.create_task(self._watch(), name="resp-watchdog")
            return conn

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        url = urlparse(self._url)
        if url.scheme == "unix":
            _, conn = await loop.create_unix_connection(_Protocol, url.path)
        else:
            tls = ssl.create_default_context() if url.scheme == "rediss" else None
            _, conn = await loop.create_connection(
                _Protocol, url.hostname or "127.0.0.1", url.port or 6379, ssl=tls
            )
        try:
            await self._handshake(conn, url)
        except BaseException:
            if conn.transport is not None:
                conn.transport.close()
            raise
        return conn

    async def _handshake(self, conn: _Protocol, url: Any) -> None:
        setup: list[Sequence[bytes | str | int]] = []
        if url.password:
            user = unquote(url.username) if url.username else "default"
            setup.append(["AUTH", user, unquote(url.password)])
        db = url.path.strip("/") if url.scheme != "unix" else ""
        if db.isdigit() and int(db):
            setup.append(["SELECT", db])
        setup += [["SCRIPT", "LOAD", script] for script in self._scripts.values()]
        if setup:
            futures = conn.send_many(b"".join(encode_command(c) for c in setup), len(setup))
            await asyncio.gather(*futures)

    async def _watch(self) -> None:
        """Close a connection whose oldest reply is overdue: its callers get an error at once."""
        while True:
            await asyncio.sleep(min(0.25, self._timeout / 4))
            conn = self._conn
            if conn is None or conn.closed or not conn.pending:
                continue
            if time.monotonic() - conn.pending[0][1] > self._timeout and conn.transport:
                conn.transport.abort()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)
        if self._conn is not None and self._conn.transport is not None:
            self._conn.transport.close()
        self._conn = None
