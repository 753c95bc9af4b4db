"""Idle connections under the gateway's protocol: kept for the keep-alive timeout between
requests, then closed by the sweep (no timer per request), blank lines or not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.http.uvicorn_protocol import SWEEP_S, BoundedHttpTools
from tests.ingress.raw_http import (
    closed_by_server,
    connection,
    read_answer,
    request,
    served_in_thread,
)

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets

KEEP_ALIVE_S = 1


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with served_in_thread(app, BoundedHttpTools, timeout_keep_alive=KEEP_ALIVE_S) as served:
        yield served


def answered(sock: Any, reader: Any) -> bool:
    sock.sendall(request("POST", "/", {}, b"{}"))
    answer = read_answer(reader)
    return answer is not None and answer.body == b"ok"


@pytest.mark.parametrize("idle_bytes", [b"", b"\r\n"], ids=["silent", "blank lines"])
def test_an_idle_connection_is_closed_after_the_keep_alive_timeout(
    port: int, idle_bytes: bytes
) -> None:
    with connection(port) as (sock, reader):
        assert answered(sock, reader)
        idle_since = time.monotonic()
        closed = False
        while not closed and time.monotonic() - idle_since < KEEP_ALIVE_S + 2 * SWEEP_S + 1:
            if idle_bytes:
                sock.sendall(idle_bytes)
            closed = closed_by_server(sock, 0.1)
        idle_for = time.monotonic() - idle_since
    assert closed, "an idle connection was kept"
    # the server's clock starts as it answers, a moment before this one does
    assert KEEP_ALIVE_S - 0.1 <= idle_for <= KEEP_ALIVE_S + SWEEP_S + 0.5, f"after {idle_for:.2f} s"


def test_a_connection_used_again_within_the_timeout_serves(port: int) -> None:
    with connection(port) as (sock, reader):
        for _ in range(4):  # 4 x 0.6 s: longer in all than the timeout, never that long idle
            assert answered(sock, reader)
            time.sleep(0.6 * KEEP_ALIVE_S)
        assert answered(sock, reader)
