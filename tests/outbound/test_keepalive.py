"""The event sender's lean HTTP client (gateway/foundation/outbound/keepalive.py) against a scripted
server on loopback: connections kept and reused, answers of every framing read, a closed kept
connection replaced, a timeout kept, and private addresses refused like httpx's client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from gateway.foundation.outbound import RefusedDestination
from gateway.foundation.outbound.keepalive import MAX_DRAIN, Answer, KeepAliveClient

pytestmark = pytest.mark.service  # its servers are on loopback

Answerer = Callable[[int], bytes | None]  # the n-th request (0-based) -> raw answer, None: close


@dataclass
class Script:
    answer: Answerer
    connections: int = 0
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def ok(body: bytes = b"ok", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def serve(script: Script) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        script.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *lines = head.decode("latin-1").split("\r\n")[:-2]
                headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                script.requests.append((line, headers, body))
                answer = script.answer(len(script.requests) - 1)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    script.port = server.sockets[0].getsockname()[1]
    return server


@pytest.fixture
async def client() -> AsyncIterator[KeepAliveClient]:
    async with KeepAliveClient(allow_private=True, timeout=5.0) as http:
        yield http


async def post(
    http: KeepAliveClient, url: str, body: bytes = b"{}", keep: int = 1024, timeout: float = 5.0
) -> Answer:
    headers = {"webhook-id": "msg_1"}
    return await http.post(url, content=body, headers=headers, keep=keep, timeout=timeout)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_is_refused_by_default(host: str) -> None:
    script = Script(lambda n: ok())
    async with await serve(script), KeepAliveClient(allow_private=False) as http:
        with pytest.raises(RefusedDestination, match="a loopback address"):
            await post(http, f"http://{host}:{script.port}/hook")
    assert script.connections == 0


async def test_calls_share_one_kept_connection(client: KeepAliveClient) -> None:
    script = Script(lambda n: ok(b"answer %d" % n))
    async with await serve(script):
        answers = [await post(client, script.url("/hook?a=1"), b'{"n":%d}' % n) for n in range(5)]
    assert [(a.status_code, a.text) for a in answers] == [(200, f"answer {n}") for n in range(5)]
    assert script.connections == 1
    line, headers, body = script.requests[3]
    assert line == "POST /hook?a=1 HTTP/1.1" and body == b'{"n":3}'
    assert headers["webhook-id"] == "msg_1" and headers["host"] == f"127.0.0.1:{script.port}"
    assert headers["content-length"] == "7"


async def test_concurrent_calls_open_a_connection_each(client: KeepAliveClient) -> None:
    script = Script(lambda n: ok())
    async with await serve(script):
        await asyncio.gather(*(post(client, script.url()) for _ in range(4)))
        await asyncio.gather(*(post(client, script.url()) for _ in range(4)))
    assert script.connections == 4 and len(script.requests) == 8


async def test_every_framing_of_an_answer_is_read(client: KeepAliveClient) -> None:
    chunked = b"HTTP/1.1 503 Busy\r\ntransfer-encoding: chunked\r\nretry-after: 7\r\n\r\n"
    chunked += b"5;x=y\r\nhello\r\n6\r\n world\r\n0\r\ntrailer: t\r\n\r\n"
    answers = [
        chunked,
        b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after a 100"),
        b"HTTP/1.1 204 No Content\r\n\r\n",
        ok(b"x" * 5000),
    ]
    script = Script(lambda n: answers[n])
    async with await serve(script):
        got = [await post(client, script.url(), keep=1024) for _ in answers]
    first = got[0]
    assert (first.status_code, first.text) == (503, "hello world")
    assert first.headers["retry-after"] == "7"
    assert got[1].text == "after a 100"
    assert (got[2].status_code, got[2].content) == (204, b"")
    assert got[3].content == b"x" * 1024  # the first `keep` bytes
    assert script.connections == 1  # every one read to its end: the connection kept


async def test_a_redirect_is_an_answer_not_followed(client: KeepAliveClient) -> None:
    script = Script(lambda n: b"HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/\r\n"
                    b"content-length: 0\r\n\r\n")  # fmt: skip
    async with await serve(script):
        answer = await post(client, script.url())
    assert answer.status_code == 302 and len(script.requests) == 1


async def test_connection_close_and_read_to_end_are_not_kept(client: KeepAliveClient) -> None:
    script = Script(lambda n: ok(extra=b"connection: close\r\n") if n == 0 else ok())
    async with await serve(script):
        assert (await post(client, script.url())).status_code == 200
        # the next call on a new connection, whose server answers without a length and closes
        raw = Script(lambda n: None)
        server = await asyncio.start_server(_answer_then_close, "127.0.0.1", 0)
        raw.port = server.sockets[0].getsockname()[1]
        async with server:
            answer = await post(client, raw.url())
        assert (answer.status_code, answer.text) == (200, "to the end")
        assert (await post(client, script.url())).status_code == 200
    assert script.connections == 2


async def _answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = [x for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")]
    await reader.readexactly(int(length[0].split(b":")[1]))
    writer.write(b"HTTP/1.0 200 OK\r\n\r\nto the end")
    await writer.drain()
    writer.close()


async def test_a_kept_connection_the_server_closed_is_replaced(client: KeepAliveClient) -> None:
    """The server closes after each answer without saying so: the next call finds its kept
    connection dead (before or after writing to it) and goes again on a new one."""
    script = Script(lambda n: ok() if n % 2 == 0 else None)
    async with await serve(script):
        first = await post(client, script.url())
        second = await post(client, script.url())  # the server reads it, then closes
    assert (first.status_code, second.status_code) == (200, 200)
    assert script.connections == 2 and len(script.requests) == 3


async def test_a_long_body_closes_the_connection(client: KeepAliveClient) -> None:
    script = Script(lambda n: ok(b"y" * (MAX_DRAIN + 10)))
    async with await serve(script):
        answer = await post(client, script.url(), keep=10)
        assert answer.content == b"y" * 10
        await post(client, script.url())
    assert script.connections == 2


async def test_no_answer_in_time_is_a_timeout(client: KeepAliveClient) -> None:
    script = Script(lambda n: b"")  # reads, never answers
    async with await serve(script):
        started = asyncio.get_running_loop().time()
        with pytest.raises(httpx.TimeoutException):
            await post(client, script.url(), timeout=0.3)
    assert asyncio.get_running_loop().time() - started < 3.0


async def test_nothing_listening_is_a_connect_error(client: KeepAliveClient) -> None:
    script = Script(lambda n: ok())
    server = await serve(script)
    server.close()
    await server.wait_closed()
    with pytest.raises(httpx.ConnectError):
        await post(client, script.url())


async def test_a_garbled_answer_is_a_protocol_error(client: KeepAliveClient) -> None:
    script = Script(lambda n: b"SMTP ready\r\n\r\n")
    async with await serve(script):
        with pytest.raises(httpx.RemoteProtocolError):
            await post(client, script.url())
