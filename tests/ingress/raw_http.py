"""HTTP/1.1 over a plain socket, for tests that decide how the bytes of a request arrive (one
write, pieces, pipelined requests, trailers) and read the answers as sent."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson
import uvicorn

from testbed.procs import free_port
from tests.support import scaled

# between the pieces of a split request, so that each tends to arrive in a read of its own
PIECE_PAUSE_S = 0.005


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def json(self) -> object:
        return orjson.loads(self.body)


def request(method: str, target: str, headers: dict[str, str], body: bytes) -> bytes:
    """One request with a Content-Length, as bytes."""
    lines = [f"{method} {target} HTTP/1.1", "Host: gateway.test"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(
    method: str, target: str, headers: dict[str, str], pieces: Iterable[bytes], trailers: bytes
) -> bytes:
    """A request with its body in chunks (one a piece), then the last chunk, `trailers` (field
    lines, each ending in CRLF) and the end of the trailer section."""
    lines = [f"{method} {target} HTTP/1.1", "Host: gateway.test", "Transfer-Encoding: chunked"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    return head + body + b"0\r\n" + trailers + b"\r\n"


@contextmanager
def connection(port: int, timeout: float = 30.0) -> Iterator[tuple[socket.socket, BinaryIO]]:
    """A connection to the server (no Nagle delay) and a buffered reader of its answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with sock.makefile("rb") as reader:
            yield sock, reader


def read_answer(reader: BinaryIO) -> Answer | None:
    """The next answer on the connection (its body by Content-Length), or None when the server
    closed the connection first."""
    try:
        status_line = reader.readline()
        if not status_line:
            return None
        headers: dict[bytes, bytes] = {}
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get(b"content-length", b"0")))
    except ConnectionError:
        return None
    return Answer(int(status_line.split()[1]), headers, body)


def send_pieces(sock: socket.socket, data: bytes, cuts: Iterable[int]) -> bool:
    """`data` in pieces split at `cuts` (offsets), one write each with a short pause between.
    False when the server closed the connection before it had all: as an HTTP client should,
    the sender then stops and reads the answer the server gave early."""
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        if start < cut:
            if start:
                time.sleep(PIECE_PAUSE_S)
            try:
                sock.sendall(data[start:cut])
            except (BrokenPipeError, ConnectionResetError):
                return False
            start = cut
    return True


def exchange(port: int, data: bytes, cuts: Iterable[int] = (), answers: int = 1) -> list[Answer]:
    """Send `data` (in one write, or split at `cuts`), then read `answers` answers."""
    with connection(port) as (sock, reader):
        send_pieces(sock, data, cuts)
        found = []
        for _ in range(answers):
            answer = read_answer(reader)
            assert answer is not None, f"connection closed after {len(found)} answers"
            found.append(answer)
        return found


def closed_by_server(sock: socket.socket, wait_s: float) -> bool:
    """Whether the server has closed the connection (read end of stream or a reset) within
    `wait_s`, answers it still had to send aside."""
    sock.settimeout(wait_s)
    try:
        while sock.recv(65_536):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


@contextmanager
def served_in_thread(app: Any, http: type, **config: Any) -> Iterator[int]:
    """`app` under uvicorn with the protocol class `http`, in a thread of this process; yields
    its port (for tests of the protocol layer that need no gateway behind it)."""
    port = free_port()
    settings = uvicorn.Config(
        app, host="127.0.0.1", port=port, http=http, loop="uvloop", log_level="error", **config
    )
    server = uvicorn.Server(settings)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + scaled(10)
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
