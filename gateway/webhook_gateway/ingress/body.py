"""Reading the request body: a hard cap that never buffers past it, and a deadline."""

from __future__ import annotations

import asyncio

from gateway.kernel.errors import PayloadTooLarge, RequestTimeout
from gateway.kernel.types import Receive

MAX_BODY = 262_144


class ClientGone(Exception):
    """The client disconnected before the body was complete; nobody is left to answer."""


class TooLarge(PayloadTooLarge):
    def __init__(self, size: int) -> None:
        super().__init__(f"body: larger than {MAX_BODY} bytes")
        self.size = size


def declared_length(raw: bytes | str | None) -> int | None:
    """Content-Length as a number; None when absent. A malformed value counts as absent: the
    streamed body is still capped, so nothing is gained by trusting it."""
    if raw is None or not raw.isdigit():
        return None
    return int(raw)


class BodyReader:
    """Reads bodies under one deadline per request, watched by ONE shared timer.

    asyncio.timeout() costs a Timeout object and a timer handle per request (~8 µs here, most
    of our per-request budget), although almost every body has already arrived when the endpoint
    runs. Instead each read registers (task -> expiry) in a dict; a single timer, armed for the
    earliest expiry, cancels the reads that overran it. Expiries are monotone in practice (one
    deadline per process), so the timer is re-armed about once per `deadline`, not per request.
    """

    def __init__(self, deadline: float, cap: int = MAX_BODY) -> None:
        self.deadline = deadline
        self.cap = cap
        self._reading: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where the last read ran

    async def read(self, receive: Receive) -> bytes:
        """The whole body, or TooLarge the moment it passes the cap, or 408 past the deadline."""
        # current_task() without its loop asks for the running loop, and on Python 3.11 that
        # asks the kernel for the process id (a system call per request): given the loop of the
        # reads before, it looks the task up directly
        known = self._loop
        task: asyncio.Task[object] | None = asyncio.current_task(known) if known else None
        loop = task.get_loop() if task is not None else asyncio.get_running_loop()
        if task is None:  # the first read, or one on another loop
            self._loop = loop
            task = asyncio.current_task(loop)
            if task is None:  # not inside a task: nothing to cancel, read without a deadline
                return await _read(receive, self.cap)
        cancelling = task.cancelling()
        expiry = loop.time() + self.deadline
        self._reading[task] = expiry
        if self._timer is None or self._timer.when() > expiry:
            self._arm(loop, expiry)
        try:
            return await _read(receive, self.cap)
        except asyncio.CancelledError:
            if task not in self._expired:
                raise
            self._expired.discard(task)
            if task.uncancel() > cancelling:
                raise  # cancelled by someone else as well: that wins
            raise RequestTimeout(f"body: not received within {self.deadline:g} seconds") from None
        finally:
            self._reading.pop(task, None)

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time()
        later: float | None = None
        for task, expiry in list(self._reading.items()):
            if expiry <= now:
                del self._reading[task]
                self._expired.add(task)
                task.cancel()
            elif later is None or expiry < later:
                later = expiry
        if later is not None:
            self._arm(loop, later)


async def read_body(receive: Receive, deadline: float, cap: int = MAX_BODY) -> bytes:
    """One body under its own deadline (tests and one-off callers)."""
    return await BodyReader(deadline, cap).read(receive)


async def _read(receive: Receive, cap: int) -> bytes:
    first = await receive()
    if first["type"] == "http.disconnect":
        raise ClientGone
    body: bytes = first.get("body", b"")
    if len(body) > cap:
        raise TooLarge(len(body))
    if not first.get("more_body", False):
        return body  # the common case: one message, no copy
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise TooLarge(size)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
