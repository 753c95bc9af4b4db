"""A 500 on a real server (uvicorn with the gateway's protocol) says `Connection: close` and
closes its connection cleanly: a keep-alive client opens a new one for its next request
instead of sending it into a closed socket (ECONNRESET)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from gateway.composition.app import create_app
from gateway.http.uvicorn_protocol import BoundedHttpTools
from tests.conftest import make_settings
from tests.ingress.raw_http import connection, read_answer, request, served_in_thread


async def _explode(_request: Request) -> Any:
    raise RuntimeError("an unforeseen fault")


@pytest.mark.service  # uvicorn on a socket
def test_a_500_closes_its_connection_and_says_so(sqlite_store: Callable[..., str]) -> None:
    app: Any = create_app(make_settings(sqlite_store()))
    app.api.add_route("/explode", _explode, methods=["GET", "POST"])
    with served_in_thread(app, BoundedHttpTools) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(3):
                crashed = client.post("/explode", json={"x": 1})
                assert crashed.status_code == 500
                assert crashed.headers["content-type"] == "application/problem+json"
                assert crashed.headers["connection"] == "close"
                assert client.get("/healthz").status_code == 200  # on a new connection
        # on one socket: the whole answer, then the server's orderly close (EOF, no reset)
        with connection(port, timeout=10) as (sock, reader):
            sock.sendall(request("POST", "/explode", {}, b"x" * 100_000))
            answer = read_answer(reader)
            assert answer is not None and answer.status == 500
            assert answer.headers.get(b"connection") == b"close", answer.headers
            assert reader.read() == b""
