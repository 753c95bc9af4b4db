"""Reading the request body: a hard cap that never buffers past it, and a deadline."""

from __future__ import annotations

import asyncio

from gateway.errors import PayloadTooLarge, RequestTimeout
from gateway.types import Receive

MAX_BODY = 262_144


class ClientGone(Exception):
    """The client disconnected before the body was complete; nobody is left to answer."""


class TooLarge(PayloadTooLarge):
    def __init__(self, size: int) -> None:
        super().__init__(f"body: larger than {MAX_BODY} bytes")
        self.size = size


def declared_length(raw: str | None) -> int | None:
    """Content-Length as a number; None when absent. A malformed value counts as absent: the
    streamed body is still capped, so nothing is gained by trusting it."""
    if raw is None or not raw.isdigit():
        return None
    return int(raw)


async def read_body(receive: Receive, deadline: float, cap: int = MAX_BODY) -> bytes:
    """The whole body, or TooLarge the moment it passes `cap`, or 408 after `deadline` seconds."""
    try:
        async with asyncio.timeout(deadline):
            return await _read(receive, cap)
    except TimeoutError:
        raise RequestTimeout(f"body: not received within {deadline:g} seconds") from None


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
