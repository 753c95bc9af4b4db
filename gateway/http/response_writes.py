"""One write per response: the head held back until the body, then both in one call.

uvicorn writes a response's head when the app sends `http.response.start` and its body when the
app sends `http.response.body`: two writes, so two send() system calls and (with TCP_NODELAY)
two packets for every response, the client reading twice. An app sends the body right after the
head almost always, in the same step of its task. Here the head waits for it: the two go out as
one write. If nothing follows before the event loop's next turn (a response that streams, whose
body comes later), the head is written alone then, so no client waits for it longer than a loop
turn.

A request's cycle writes through this object instead of the transport (see
`BoundedHttpTools.on_headers_complete`); it writes in the order the cycle wrote, and what it holds
goes out before the connection is closed.
"""

from __future__ import annotations

import asyncio


class OneWriteResponses:
    """What a connection's request cycles write to: write, close, is_closing (what uvicorn's
    RequestResponseCycle calls on its transport)."""

    __slots__ = ("held", "loop", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self.held
        if held is None:
            self.held = data
            self.loop.call_soon(self.flush)
        else:
            self.held = None
            self.transport.writelines((held, data))  # one system call, no copy of the body

    def flush(self) -> None:
        """Write what is held, alone (the loop's turn ended before anything followed it)."""
        held = self.held
        if held is not None:
            self.held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()
