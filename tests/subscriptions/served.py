"""A GatewayClient's app also served on a real socket (uvicorn on the client's own event loop,
its lifespan state shared), for what TestClient cannot do: answers that never end (streams)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from testbed.procs import free_port
from tests.support import GatewayClient, scaled


@contextmanager
def served(client: GatewayClient, port: int | None = None) -> Iterator[int]:
    state = client.app_state

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope["state"] = dict(state)
        await client.app(scope, receive, send)

    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="error",
        timeout_graceful_shutdown=1,  # open streams end with the server
    )
    server = uvicorn.Server(config)
    assert client.portal is not None
    future = client.portal.start_task_soon(server.serve)
    deadline = time.monotonic() + scaled(10)
    while not server.started:
        assert not future.done() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        future.result(timeout=10)
