"""API bodies are capped while streaming: a declared Content-Length or the streamed bytes past
1 MB are a 413 problem, and the server reads no more of the body than the cap and one chunk.
Refused before the store is asked: one gateway (SQLite) for the module."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.composition.app import openapi_document
from gateway.foundation.api.decoding import MAX_API_BODY
from gateway.kernel.types import Message
from tests.support import World

CHUNK = 64 * 1024
HUGE = 64 * 1024 * 1024
BODY_OPERATIONS = sorted(
    (method.upper(), path.removeprefix("/api/v1"))
    for path, operations in openapi_document()["paths"].items()
    for method, operation in operations.items()
    if path.startswith("/api/v1/") and "requestBody" in operation
)
# the cap of each body operation, as the document states it (x-max-bytes)
CAPS = {
    (method.upper(), path.removeprefix("/api/v1")): operation["requestBody"]["x-max-bytes"]
    for path, operations in openapi_document()["paths"].items()
    for method, operation in operations.items()
    if path.startswith("/api/v1/") and "requestBody" in operation
}


class Stream:
    """An endless request body of CHUNK-sized pieces that counts what the server took."""

    def __init__(self) -> None:
        self.consumed = 0

    async def receive(self) -> Message:
        self.consumed += CHUNK
        return {"type": "http.request", "body": b" " * CHUNK, "more_body": True}


def _post(world: World, method: str, path: str, stream: Stream, declared: int | None) -> Any:
    """The request straight through the ASGI app, so the body is never buffered by a client."""
    url = "/api/v1" + path.format(uid=world.factory_uid, **_placeholders(path))
    headers = [(b"authorization", f"Bearer {world.user_key}".encode())]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
        "state": dict(world.client.app_state),
    }
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    assert world.client.portal is not None
    world.client.portal.call(world.client.app, scope, stream.receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


def _placeholders(path: str) -> dict[str, str]:
    names = {part[1:-1] for part in path.split("/") if part.startswith("{")} - {"uid"}
    return {name: f"missing_{name}" for name in names}


def test_every_json_endpoint_is_covered() -> None:
    assert ("POST", "/agent/runs") in BODY_OPERATIONS and len(BODY_OPERATIONS) >= 10
    # 1 MB, but for the factory trees plan, apply and validate take (files of 2 MiB)
    larger = {operation for operation, cap in CAPS.items() if cap != MAX_API_BODY}
    assert larger == {
        ("POST", "/factory-files/plan"),
        ("POST", "/factory-files/apply"),
        ("POST", "/factory-files/validate"),
    }


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
def test_streamed_body_over_the_cap_is_413_before_more_is_read(
    shared_world: World, method: str, path: str
) -> None:
    stream = Stream()
    status, headers, body = _post(shared_world, method, path, stream, declared=None)
    assert status == 413, body
    assert headers[b"content-type"] == b"application/problem+json"
    assert b'"code":"payload_too_large"' in body
    cap = CAPS[(method, path)]
    assert cap < stream.consumed <= cap + CHUNK


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
def test_declared_length_over_the_cap_is_413_without_reading(
    shared_world: World, method: str, path: str
) -> None:
    stream = Stream()
    status, _, body = _post(shared_world, method, path, stream, declared=HUGE)
    assert status == 413 and b'"code":"payload_too_large"' in body
    assert stream.consumed == 0


def test_a_body_at_the_cap_is_read_whole(shared_world: World) -> None:
    """The cap is not a limit on ordinary bodies: exactly 1 MB is parsed (and found invalid)."""

    class Exact(Stream):
        async def receive(self) -> Message:
            left = MAX_API_BODY - self.consumed
            piece = min(CHUNK, left)
            self.consumed += piece
            return {"type": "http.request", "body": b" " * piece, "more_body": left > piece}

    stream = Exact()
    status, _, body = _post(shared_world, "POST", "/agent/runs", stream, declared=MAX_API_BODY)
    assert status == 400 and b"body: not valid JSON" in body
    assert stream.consumed == MAX_API_BODY
