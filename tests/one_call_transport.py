"""An httpx2 transport for the TestClient that hands a whole request to the app in one call into
the portal's event loop and gets the whole response back. Starlette's own transport makes about
ten calls into the loop per request (events, a stream, the app's task, each body chunk): ~3-4 ms
a request on this machine against ~0.6 ms this way, which was most of an API test's time. No
test streams a response; each is read whole, as the TestClient reads it."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import anyio
import httpx2
from starlette.testclient import TestClient
from starlette.types import Message

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class OneCallTransport(httpx2.BaseTransport):
    """Requests of `test_client` (inside its `with`, so its portal and lifespan state exist),
    coming from `peer`. An exception of the app is answered 500, as the TestClient answers it
    with `raise_server_exceptions=False` (the gateway's own error handler has usually sent its
    500 already)."""

    def __init__(self, test_client: TestClient, peer: tuple[str, int]) -> None:
        self.test_client = test_client
        self.peer = peer

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        portal = self.test_client.portal
        assert portal is not None, "requests are made inside the client's `with`"
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": unquote(url.path),
            "raw_path": url.raw_path.split(b"?", 1)[0],
            "root_path": "",
            "query_string": url.query,
            "headers": [(key.lower(), value) for key, value in request.headers.raw],
            "client": self.peer,
            "server": [url.host, url.port or {"http": 80, "https": 443}[url.scheme]],
            "extensions": {},
            "state": self.test_client.app_state.copy(),
        }
        status, headers, body = portal.call(self._exchange, scope, request.read())
        return httpx2.Response(status, headers=headers, content=body, request=request)

    async def _exchange(self, scope: dict[str, Any], body: bytes) -> Answer:
        answered = anyio.Event()
        started: Message = {}
        chunks: list[bytes] = []
        delivered = False

        async def receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()  # the client hangs up once the response is complete
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    answered.set()

        try:
            await self.test_client.app(scope, receive, send)
        except Exception:
            if not started:
                return 500, [], b""
        return started["status"], list(started.get("headers", [])), b"".join(chunks)
