"""The request-head limits the app checks itself, the same under every HTTP server."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.http.request_head import (
    MAX_HEADER_BYTES,
    MAX_HEADER_LINE,
    MAX_HEADERS,
    MAX_TARGET,
    READ_BUFFER,
    HeadLimits,
    head_error,
)
from gateway.kernel.errors import HeadersTooLarge, UriTooLong


def scope(headers: list[tuple[bytes, bytes]], path: bytes = b"/webhooks/w/x") -> dict[str, Any]:
    return {"type": "http", "headers": headers, "raw_path": path, "query_string": b""}


def line(size: int, name: bytes = b"x-big") -> tuple[bytes, bytes]:
    """A header whose name and value add up to `size` bytes."""
    return name, b"v" * (size - len(name))


def test_within_every_limit_passes() -> None:
    at_limits = [line(MAX_HEADER_LINE)] + [(b"x-%d" % i, b"1") for i in range(MAX_HEADERS - 1)]
    assert head_error(scope(at_limits, b"/" + b"p" * (MAX_TARGET - 1))) is None


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ([(b"x-%d" % i, b"1") for i in range(MAX_HEADERS + 1)], "header lines"),
        ([line(MAX_HEADER_LINE + 1)], "a header line"),
        ([line(MAX_HEADER_LINE, b"x-%d" % i) for i in range(3)], "in all"),
    ],
)
def test_headers_over_a_limit_are_431(headers: list[tuple[bytes, bytes]], detail: str) -> None:
    error = head_error(scope(headers))
    assert isinstance(error, HeadersTooLarge) and error.status == 431
    assert detail in error.detail


def test_total_is_counted_over_all_lines() -> None:
    half = MAX_HEADER_BYTES // 2
    assert head_error(scope([line(half, b"x-a"), line(half, b"x-b")])) is None
    assert isinstance(head_error(scope([line(half, b"x-a"), line(half + 1, b"x-b")])), Exception)


def test_a_long_target_is_414() -> None:
    error = head_error(scope([], b"/" + b"p" * MAX_TARGET))
    assert isinstance(error, UriTooLong) and error.status == 414


def test_a_head_within_the_limits_fits_the_servers_read_buffer() -> None:
    framing = MAX_HEADERS * len(b": \r\n") + len(b"POST  HTTP/1.1\r\n\r\n")
    assert MAX_HEADER_BYTES + MAX_TARGET + framing <= READ_BUFFER


async def test_the_guard_answers_a_problem_and_closes_before_the_app_runs() -> None:
    called: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(_scope: Any, _receive: Any, _send: Any) -> None:
        called.append("app")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body of a refused request is never read")

    await HeadLimits(app)(scope([line(MAX_HEADER_LINE + 1)]), receive, send)
    assert not called
    start, body = sent
    assert start["status"] == 431
    assert (b"connection", b"close") in start["headers"]
    assert (b"content-type", b"application/problem+json") in start["headers"]
    assert b'"code":"headers_too_large"' in body["body"]

    await HeadLimits(app)(scope([line(100)]), receive, send)
    assert called == ["app"]
