"""What a Redis 503 says, by cause: certainly not recorded (no connection, a refused write) or
possibly recorded (the script was sent and its reply never came), with a Retry-After to match."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import hiredis
import pytest

from gateway.foundation.backends.contract import Submission, Target
from gateway.foundation.backends.lua_scripts import sha1
from gateway.foundation.backends.resp_client import RespClient
from gateway.kernel.errors import Unavailable
from gateway.webhook_gateway.transports.redis_stream.ingress import (
    HOT_SCRIPTS,
    REFUSED_RETRY_AFTER_S,
    RedisBackend,
)
from testbed.procs import free_port
from testbed.redis_server import redis_server

pytestmark = pytest.mark.service  # its own redis-server, processes or sockets

SUBMISSION = Submission(Target("whk_503", 1, 5), "dlv_503", "id-503", b"{}", True)


async def _refusal(url: str, timeout: float = 2.0) -> Unavailable:
    backend = RedisBackend(RespClient(url, timeout=timeout, scripts=HOT_SCRIPTS), "gw", 10, 100)
    try:
        with pytest.raises(Unavailable) as refused:
            await backend.submit(SUBMISSION)
        return refused.value
    finally:
        await backend.close()


def test_no_connection_is_certainly_not_recorded() -> None:
    refused = asyncio.run(_refusal(f"redis://127.0.0.1:{free_port()}/0"))
    assert "nothing was recorded" in refused.detail
    assert refused.headers["Retry-After"] == "1"


@contextlib.asynccontextmanager
async def _stalling_redis() -> AsyncIterator[str]:
    """Answers the connection's SCRIPT LOADs like Redis, then never replies again (as a
    SIGSTOPped or partitioned Redis)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parser = hiredis.Reader()
        try:
            while data := await reader.read(65536):
                parser.feed(data)
                while (command := parser.gets()) is not False:
                    if command[:2] == [b"SCRIPT", b"LOAD"]:
                        digest = sha1(command[2].decode()).encode()
                        writer.write(b"$%d\r\n%b\r\n" % (len(digest), digest))
                        await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.close()
        await server.wait_closed()


def test_a_reply_that_never_comes_may_have_been_recorded() -> None:
    async def run() -> Unavailable:
        async with _stalling_redis() as url:
            return await _refusal(url, timeout=0.3)

    refused = asyncio.run(run())
    assert "may have been recorded" in refused.detail
    assert "retry with the same delivery id" in refused.detail
    assert refused.headers["Retry-After"] == "1"


def test_a_write_refused_for_memory_is_not_recorded_and_retried_later() -> None:
    full = ("--maxmemory", "1", "--maxmemory-policy", "noeviction")
    with redis_server(*full) as server, server.client() as client:
        before = client.dbsize()
        refused = asyncio.run(_refusal(server.url))
        assert client.dbsize() == before
    assert refused.detail.startswith("delivery log refused the write (OOM")
    assert "nothing was recorded" in refused.detail
    assert refused.headers["Retry-After"] == str(REFUSED_RETRY_AFTER_S)
