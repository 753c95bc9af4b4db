from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.foundation.backends.contract import RATE_LIMIT, Submission, Target, Verdict, shard_of
from gateway.foundation.backends.resp_client import RespClient
from gateway.foundation.store import create_database, migrate
from gateway.kernel.errors import RequestTimeout
from gateway.kernel.logs import RedactTokens, redact
from gateway.webhook_gateway.ingress.body import (
    MAX_BODY,
    BodyReader,
    TooLarge,
    declared_length,
    read_body,
)
from gateway.webhook_gateway.transports.embedded.backend import MemoryBackend
from gateway.webhook_gateway.transports.embedded.writer import DeliveryWriter
from gateway.webhook_gateway.transports.redis_stream.ingress import HOT_SCRIPTS, RedisBackend
from tests.examples import examples


def _receiver(chunks: list[bytes]) -> Any:
    messages = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


@st.composite
def chunked(draw: st.DrawFn) -> list[bytes]:
    size = draw(st.one_of(st.integers(0, 2048), st.integers(MAX_BODY - 64, MAX_BODY + 64)))
    cuts = sorted(draw(st.lists(st.integers(0, size), max_size=6)))
    body = b"x" * size
    bounds = [0, *cuts, size]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=examples(200), deadline=None)
@given(chunked())
def test_streamed_body_cap(chunks: list[bytes]) -> None:
    size = sum(map(len, chunks))

    async def run() -> bytes | None:
        try:
            return await read_body(_receiver(chunks), 5.0)
        except TooLarge:
            return None

    body = asyncio.run(run())
    if size > MAX_BODY:
        assert body is None  # never accepted over the cap
    else:
        assert body == b"".join(chunks)  # never rejected within it


@given(st.integers(0, 2 * MAX_BODY))
def test_declared_length_decides(length: int) -> None:
    declared = declared_length(str(length))
    assert declared == length
    assert (declared > MAX_BODY) == (length > MAX_BODY)


def test_body_deadline() -> None:
    async def slow() -> dict[str, Any]:
        await asyncio.sleep(10)
        return {}

    async def run() -> None:
        with pytest.raises(RequestTimeout):
            await read_body(slow, 0.05)

    asyncio.run(run())


@pytest.fixture(params=["memory", "redis"])
def backend_factory(
    request: pytest.FixtureRequest, tmp_path: Path, redis_url: str, redis_prefix: str
) -> Any:
    async def make() -> tuple[Any, Any]:
        if request.param == "redis":
            client = RespClient(redis_url, scripts=HOT_SCRIPTS)
            prefix = f"{redis_prefix}:{uuid.uuid4().hex}"
            return RedisBackend(client, prefix, 10, 100_000), client.close
        database = create_database(f"sqlite+aiosqlite:///{tmp_path}/p{uuid.uuid4().hex}.db")
        await migrate(database)
        log = DeliveryWriter(database)
        log.start()

        async def close() -> None:
            await log.close()
            await database.close()

        return MemoryBackend(database, log, 10, 100_000), close

    return make


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(n=st.integers(1, 140), dup_every=st.integers(0, 5), bad_every=st.integers(0, 7))
def test_rate_window_gives_min_n_60(
    backend_factory: Any, n: int, dup_every: int, bad_every: int
) -> None:
    async def run() -> int:
        backend, close = await backend_factory()
        target = Target("wh_prop", 1, shard_of("wh_prop"))
        try:
            outcomes = await asyncio.gather(
                *[
                    backend.submit(
                        Submission(
                            target,
                            f"dlv_{uuid.uuid4().hex}",
                            f"id{i % dup_every if dup_every else i}",
                            b"{}",
                            not (bad_every and i % bad_every == 0),
                        )
                    )
                    for i in range(n)
                ]
            )
        finally:
            await close()
        return sum(o.verdict is not Verdict.RATE_LIMITED for o in outcomes)

    assert asyncio.run(run()) == min(n, RATE_LIMIT)


def test_url_tokens_never_reach_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    line = '127.0.0.1:5 - "POST /webhooks/w/wh_1/wht_SECRET?x=1 HTTP/1.1" 202'
    assert "wht_SECRET" not in redact(line) and "/webhooks/w/wh_1/{token}" in redact(line)
    logger = logging.getLogger("test.redact")
    logger.addFilter(RedactTokens())
    with caplog.at_level(logging.INFO, logger="test.redact"):
        logger.info(
            '%s - "%s %s HTTP/%s" %d',
            "1.2.3.4:1",
            "POST",
            "/webhooks/w/wh_9/wht_TOPSECRET",
            "1.1",
            202,
        )
    assert "wht_TOPSECRET" not in caplog.text and "{token}" in caplog.text


def test_a_body_reader_keeps_its_deadline_on_a_later_event_loop() -> None:
    """It remembers the loop of its last read; on another loop it finds that one instead."""
    reader = BodyReader(0.05)

    async def never() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def late_read() -> None:
        with pytest.raises(RequestTimeout):  # not TimeoutError: the reader's own deadline
            await asyncio.wait_for(reader.read(never), 2)

    asyncio.run(late_read())
    asyncio.run(late_read())


def test_shared_body_deadline_times_out_only_the_slow_reader() -> None:
    async def run() -> None:
        reader = BodyReader(0.05)
        gate = asyncio.Event()

        async def slow() -> dict[str, Any]:
            await gate.wait()
            return {"type": "http.request", "body": b"late"}

        async def fast() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}"}

        results = await asyncio.gather(reader.read(slow), reader.read(fast), return_exceptions=True)
        assert isinstance(results[0], RequestTimeout) and results[1] == b"{}"
        # a read cancelled by someone else stays a cancellation, not a 408
        task = asyncio.create_task(reader.read(slow))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        assert await reader.read(slow) == b"late"  # the timer re-arms for later reads

    asyncio.run(run())
