"""One write per response (gateway/http/response_writes.py): the head joins the body that follows it
in the same step, waits no longer than a loop turn when nothing follows, and goes out before the
connection closes. Then the same through uvicorn with the gateway's protocol, on a socket."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.http.response_writes import OneWriteResponses
from gateway.http.uvicorn_protocol import BoundedHttpTools
from tests.ingress.raw_http import connection, read_answer, request, served_in_thread

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class RecordingTransport:
    """What a transport was asked to do, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", data))

    def writelines(self, pieces: tuple[bytes, ...]) -> None:
        self.calls.append(("writelines", tuple(pieces)))

    def close(self) -> None:
        self.closing = True
        self.calls.append(("close", None))

    def is_closing(self) -> bool:
        return self.closing


def responses() -> tuple[OneWriteResponses, RecordingTransport]:
    transport = RecordingTransport()
    return OneWriteResponses(transport, asyncio.get_running_loop()), transport  # type: ignore[arg-type]


async def test_a_head_and_the_body_after_it_are_one_write() -> None:
    writes, transport = responses()
    writes.write(HEAD)
    writes.write(b"{}")
    assert transport.calls == [("writelines", (HEAD, b"{}"))]
    await asyncio.sleep(0)  # the loop's turn: nothing is left to write
    assert transport.calls == [("writelines", (HEAD, b"{}"))]


async def test_a_head_alone_goes_out_at_the_loops_next_turn() -> None:
    writes, transport = responses()
    writes.write(HEAD)
    assert transport.calls == []
    await asyncio.sleep(0)
    assert transport.calls == [("write", HEAD)]
    writes.write(b"{}")  # a streamed body, later: held like a head, then alone
    await asyncio.sleep(0)
    assert transport.calls == [("write", HEAD), ("write", b"{}")]


async def test_what_is_held_goes_out_before_the_close() -> None:
    writes, transport = responses()
    writes.write(HEAD)
    writes.close()
    assert transport.calls == [("write", HEAD), ("close", None)]
    await asyncio.sleep(0)
    assert transport.calls == [("write", HEAD), ("close", None)]


async def test_nothing_is_written_once_the_transport_closes() -> None:
    writes, transport = responses()
    writes.write(HEAD)
    transport.closing = True  # the peer went away meanwhile
    await asyncio.sleep(0)
    assert transport.calls == []
    assert writes.is_closing()


# through uvicorn and the gateway's protocol, on a real socket


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    if scope["path"] == "/stream":  # the head now, the body a moment later
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0.5)
        await send({"type": "http.response.body", "body": b"late", "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [(b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SocketCalls:
    """A real transport, its write calls counted (what reaches the socket, one call each)."""

    calls: list[str] = []  # of every connection, in order

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes) -> None:
        self.calls.append("write")
        self._transport.write(data)

    def writelines(self, pieces: tuple[bytes, ...]) -> None:
        self.calls.append("writelines")
        self._transport.writelines(pieces)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CountedProtocol(BoundedHttpTools):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(SocketCalls(transport))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with served_in_thread(app, CountedProtocol) as served:
        yield served


@pytest.mark.parametrize("size", [2, 1024, 256 * 1024])
@pytest.mark.service
def test_pipelined_answers_come_whole_and_in_order(port: int, size: int) -> None:
    bodies = [bytes([65 + i]) * size for i in range(3)]
    with connection(port) as (sock, reader):
        sock.sendall(b"".join(request("POST", "/echo", {}, body) for body in bodies))
        for body in bodies:
            answer = read_answer(reader)
            assert answer is not None and answer.status == 200
            assert answer.body == body


@pytest.mark.service
def test_each_answer_reaches_the_socket_in_one_call(port: int) -> None:
    SocketCalls.calls.clear()
    with connection(port) as (sock, reader):
        for size in (2, 1024, 64 * 1024):
            sock.sendall(request("POST", "/echo", {}, b"x" * size))
            answer = read_answer(reader)
            assert answer is not None and answer.body == b"x" * size
    assert SocketCalls.calls == ["writelines"] * 3


@pytest.mark.service
def test_a_streamed_head_is_not_held_until_its_body(port: int) -> None:
    with connection(port) as (sock, _reader):
        sock.sendall(request("POST", "/stream", {}, b""))
        sent = time.monotonic()
        head = sock.recv(4096)
        waited = time.monotonic() - sent
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"late" not in head
        assert waited < 0.4, f"the head came after {waited:.2f} s, with the body"
        rest = b""
        while not rest.endswith(b"0\r\n\r\n"):
            rest += sock.recv(4096)
        assert b"late" in rest
