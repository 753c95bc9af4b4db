"""Server-Sent Events framing, and the loop that follows a source of numbered records with a
heartbeat comment between them (the event stream and the delivery stream both use it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

HEARTBEAT_S = 15.0  # a comment line at least this often keeps proxies from closing the stream
POLL_S = 0.5
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
Record = tuple[str, str, bytes]  # (id, event name or "", data)
# next records after a position -> (records, new position)
Fetch = Callable[[object], Awaitable[tuple[Sequence[Record], object]]]


class Ended(Exception):
    """Raised by a fetch when its stream must end (what it follows is gone or revoked)."""


def frame(record_id: str, event: str, data: bytes) -> bytes:
    """One SSE message; `data` is one line of JSON (JSON escapes newlines)."""
    head = f"id: {record_id}\n" + (f"event: {event}\n" if event else "")
    return head.encode() + b"data: " + data + b"\n\n"


async def follow(
    fetch: Fetch,
    position: object,
    *,
    heartbeat_s: float = HEARTBEAT_S,
    poll_s: float = POLL_S,
    retry_ms: int | None = None,
) -> AsyncIterator[bytes]:
    """Frames of what `fetch` finds, in order, until it raises Ended; a `: heartbeat` comment
    when nothing was sent for `heartbeat_s`. The client's disconnect ends it (the response is
    cancelled). `retry_ms`: the reconnection delay told to the client (`retry:`)."""
    yield b": connected\n" + (f"retry: {retry_ms}\n" if retry_ms else "").encode() + b"\n"
    last_sent = time.monotonic()
    while True:
        try:
            records, position = await fetch(position)
        except Ended:
            return
        for record_id, event, data in records:
            yield frame(record_id, event, data)
        if records:
            last_sent = time.monotonic()
            continue  # there may be more right away
        if time.monotonic() - last_sent >= heartbeat_s:
            yield b": heartbeat\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(poll_s)
