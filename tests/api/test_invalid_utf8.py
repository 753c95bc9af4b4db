"""JSON text is UTF-8: an API body that is not is a 400 naming the first bad byte, on every
operation that takes a body, and the connection it came on goes on serving."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.composition.app import openapi_document
from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, serve_gateway, stop_gateway
from tests.support import World

NOT_UTF8 = b'{"name": "caf\xe9"}'  # Latin-1, as a careless client sends it
DETAIL = "body: not valid UTF-8 (byte 0xe9 at offset 13)"
BODY_OPERATIONS = sorted(
    (method.upper(), path.removeprefix("/api/v1"))
    for path, operations in openapi_document()["paths"].items()
    for method, operation in operations.items()
    if path.startswith("/api/v1/") and "requestBody" in operation
)


def _path(world: World, path: str) -> str:
    names = {part[1:-1] for part in path.split("/") if part.startswith("{")} - {"uid"}
    return path.format(uid=world.factory_uid, **{name: f"missing_{name}" for name in names})


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
def test_no_operation_fails_on_a_body_that_is_not_utf8(
    world: World, method: str, path: str
) -> None:
    for key in (world.user, world.agent):
        response = world.api(method, _path(world, path), content=NOT_UTF8, headers=key)
        assert response.status_code < 500, response.text
        if response.status_code == 400:  # the body was read: its encoding is the complaint
            assert response.json()["detail"] == DETAIL


def test_creating_a_webhook_with_a_latin1_name_is_400(world: World) -> None:
    response = world.api(
        "POST", f"/factory/{world.factory_uid}/webhooks", content=NOT_UTF8, headers=world.user
    )
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "invalid_request" and problem["detail"] == DETAIL


@pytest.mark.parametrize(
    "body",
    [
        NOT_UTF8,
        b'{"name": "r", "unknown\xff": 1}',  # in a field no Struct takes: still refused
        b'{"name": "\xed\xa0\x80"}',  # an encoded surrogate is not UTF-8 either
    ],
)
def test_registering_a_runner_with_a_body_that_is_not_utf8_is_400(
    world: World, body: bytes
) -> None:
    response = world.api("POST", "/runner/register", content=body, headers=world.agent)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("body: not valid UTF-8 (byte 0x")


def test_utf8_beyond_ascii_is_fine(world: World) -> None:
    body = '{"name": "café ☕ 𝄞"}'.encode()
    response = world.api("POST", "/runner/register", content=body, headers=world.agent)
    assert response.status_code == 201, response.text


async def _agent_key(database_url: str) -> str:
    from gateway.foundation.accounts import identities
    from gateway.foundation.services import build_services
    from gateway.foundation.store import migrate

    services = build_services(make_settings(database_url))
    try:
        await migrate(services.database)
        async with services.database.transaction() as conn:
            team = await identities.create_team(conn, "T")
            _agent, key = await identities.create_agent(conn, team, "runner")
        return key
    finally:
        await services.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, str, Path]]:
    database_url = f"sqlite:///{tmp_path}/gw.db"
    key = asyncio.run(_agent_key(database_url))
    values = {
        "database_url": database_url,
        "secret_key": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "log_level": "info",
    }
    port, log = free_port(), tmp_path / "serve.log"
    proc = serve_gateway(gateway_env(**values), port, log)
    try:
        yield port, key, log
    finally:
        stop_gateway(proc)


def _register(key: str, body: bytes) -> bytes:
    return (
        b"POST /api/v1/runner/register HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (key.encode(), len(body), body)
    )


def _answer(sock: socket.socket) -> bytes:
    """One whole response (head and its Content-Length of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.mark.slow  # starts processes of its own
def test_a_served_400_keeps_the_connection_and_logs_no_error(
    served: tuple[int, str, Path],
) -> None:
    port, key, log = served
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_register(key, NOT_UTF8))
        refused = _answer(sock)
        assert refused.startswith(b"HTTP/1.1 400 "), refused
        assert DETAIL.encode() in refused
        assert b"connection: close" not in refused.lower()
        # the same connection serves the next request
        sock.sendall(_register(key, b'{"name": "caf\xc3\xa9"}'))
        accepted = _answer(sock)
        assert accepted.startswith(b"HTTP/1.1 201 "), accepted
    text = log.read_text()
    assert "Traceback" not in text and "unhandled error" not in text, text
