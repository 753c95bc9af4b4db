"""A provider's API on loopback, for the reply clients' tests: an HTTP server (a thread of this
process) that records every call and answers as the provider's public API reference says,
from a subclass's routes. A test can script what comes next (a 503, a 429 with Retry-After, a
401) before the routes answer again."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: Any  # the JSON value, a form's fields, or None
    at: float = field(default_factory=time.monotonic)  # when it arrived


@dataclass
class Answer:
    status: int
    body: Any = None  # JSON unless bytes or str
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Call, re.Match[str]], Answer]


class StandIn:
    """Subclasses list `routes`: (method, path pattern, handler)."""

    routes: list[tuple[str, str, str]] = []  # (method, pattern, name of the handler method)

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.url = ""
        self._scripted: deque[Answer] = deque()
        self._lock = threading.Lock()

    def answer_next(
        self, status: int, body: Any = None, headers: dict[str, str] | None = None
    ) -> None:
        """The next call gets this answer, whatever it asks (then the routes answer again)."""
        self.queue(Answer(status, body, headers or {}))

    def queue(self, answer: Answer) -> None:
        self._scripted.append(answer)

    def calls_to(self, pattern: str) -> list[Call]:
        return [call for call in self.calls if re.fullmatch(pattern, call.path)]

    def handle(self, call: Call) -> Answer:
        with self._lock:
            self.calls.append(call)
            if self._scripted:
                return self._scripted.popleft()
            for method, pattern, name in self.routes:
                match = re.fullmatch(pattern, call.path)
                if match and method == call.method:
                    handler: Handler = getattr(self, name)
                    return handler(call, match)
        return self.not_found(call)

    def not_found(self, call: Call) -> Answer:
        return Answer(404, {"message": "Not Found"})

    @contextmanager
    def serve(self) -> Iterator[str]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self.url
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)


def _handler_class(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            headers = {name.lower(): value for name, value in self.headers.items()}
            call = Call(
                self.command, parts.path, dict(parse_qsl(parts.query)), headers, _body(raw, headers)
            )
            self._write(stand_in.handle(call))

        def _write(self, answer: Answer) -> None:
            body = answer.body
            if isinstance(body, str):
                content, kind = body.encode(), "text/plain"
            elif isinstance(body, bytes):
                content, kind = body, "application/octet-stream"
            elif body is None:
                content, kind = b"", "text/plain"
            else:
                content, kind = json.dumps(body).encode(), "application/json; charset=utf-8"
            self.send_response(answer.status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(content)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _body(raw: bytes, headers: dict[str, str]) -> Any:
    if not raw:
        return None
    kind = headers.get("content-type", "")
    if kind.startswith("application/x-www-form-urlencoded"):
        return dict(parse_qsl(raw.decode()))
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
