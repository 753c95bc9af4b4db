"""Request-head limits on a real `gateway serve`: what a
stranger sends before any authentication (huge or many headers, a trickled head) is refused or
dropped without the server holding it, and long delivery ids stay distinct deliveries."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.http.request_head import MAX_HEADER_LINE, MAX_HEADERS
from tests.ingress.hooks import Served, served_gateway, tree_peak_rss_kib

pytestmark = pytest.mark.slow  # starts processes of its own

TOKEN = "wht_head_limits_token"
HEADER_TIMEOUT_S = 1


class HeadClient:
    """Requests to a served gateway's token webhook."""

    def __init__(self, served: Served) -> None:
        self.proc, self.port, self.uid = served.proc, served.port, served.prepared.webhook_uid

    def head(self, extra: bytes, body: bytes = b"{}") -> bytes:
        return (
            b"POST /webhooks/w/%s HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (self.uid.encode(), TOKEN.encode(), len(body), extra)
        )

    def exchange(self, request: bytes, chunk: int = 1 << 20) -> bytes:
        """Send `request` (as far as the server lets us), then read its answer; b"" when the
        server closed the connection instead."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            try:
                for start in range(0, len(request), chunk):
                    sock.sendall(request[start : start + chunk])
            except OSError:
                pass  # refused mid-way: the server closed or reset the connection
            try:
                return sock.recv(4096)
            except OSError:
                return b""

    def deliver(self, delivery_id: str) -> str:
        response = httpx.post(
            f"http://127.0.0.1:{self.port}/webhooks/w/{self.uid}",
            content=b"{}",
            headers={"Authorization": f"Bearer {TOKEN}", "X-Service-Delivery-Id": delivery_id},
            timeout=30,
        )
        assert response.status_code == 202, response.text
        delivery: str = response.json()["delivery_id"]
        return delivery


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, redis_prefix: str) -> Iterator[HeadClient]:
    tmp = tmp_path_factory.mktemp("served")
    timeout = str(HEADER_TIMEOUT_S)
    with served_gateway("embedded", tmp, TOKEN, redis_prefix, header_timeout=timeout) as gateway:
        yield HeadClient(gateway)


def status(answer: bytes) -> int | None:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def test_a_64_mb_header_is_refused_without_being_held(served: HeadClient) -> None:
    before = tree_peak_rss_kib(served.proc.pid)
    answer = served.exchange(served.head(b"X-Big: " + b"a" * (64 << 20) + b"\r\n"))
    assert status(answer) in (431, None), answer[:200]  # 431, or the connection closed
    grown_mib = (tree_peak_rss_kib(served.proc.pid) - before) / 1024
    assert grown_mib < 16, f"the server's peak RSS grew by {grown_mib:.0f} MiB"
    served.deliver("after-the-big-header")  # and it still serves


@pytest.mark.parametrize(
    "extra",
    [
        b"X-Line: " + b"a" * (MAX_HEADER_LINE + 1) + b"\r\n",
        b"".join(b"X-L%d: " % i + b"a" * 12_000 + b"\r\n" for i in range(4)),
        b"".join(b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS + 5)),
    ],
    ids=["line", "total", "count"],
)
def test_headers_over_the_limits_get_431(served: HeadClient, extra: bytes) -> None:
    assert status(served.exchange(served.head(extra))) == 431


def test_a_trickled_head_is_dropped(served: HeadClient) -> None:
    """One header line at a time, long after the header deadline: the server answers 408 or
    closes, while the sender still has lines left to send."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(b"POST /webhooks/w/%s HTTP/1.1\r\nHost: t\r\n" % served.uid.encode())
        dropped = False
        for line in range(40):  # 40 x 0.25 s: ten times the deadline (1 s, swept every 1 s)
            time.sleep(0.25)
            try:
                sock.sendall(b"X-Slow-%d: v\r\n" % line)
            except OSError:
                dropped = True
                break
        if not dropped:
            sock.settimeout(0.5)
            try:
                answer = sock.recv(4096)
            except TimeoutError:
                answer = b"still open"
            except OSError:
                answer = b""
            dropped = answer == b"" or status(answer) == 408
    assert dropped, "a head trickled for 10 s was still being read"
    served.deliver("after-the-trickle")


def test_delivery_ids_sharing_300_characters_are_distinct_deliveries(served: HeadClient) -> None:
    prefix = f"{served.proc.pid}-" + "p" * 400
    ids = [prefix[:299], prefix[:300], prefix[:300] + "x", prefix[:300] + "y" * 10_000]
    first = [served.deliver(value) for value in ids]
    assert len(set(first)) == len(ids)  # none of them was taken for another's duplicate
    assert [served.deliver(value) for value in ids] == first  # each repeat is its duplicate


def test_every_http_worker_keeps_the_configured_head_deadline(
    tmp_path: Path, redis_prefix: str
) -> None:
    """With `--workers 2` uvicorn spawns its workers: each takes GATEWAY_HEADER_TIMEOUT from the
    settings (it kept the 10 s default before), so an unfinished head is answered 408 after
    ~1 s on every connection, whichever worker holds it."""
    timeout = str(HEADER_TIMEOUT_S)
    with served_gateway(
        "redis", tmp_path, TOKEN, redis_prefix, workers=2, header_timeout=timeout
    ) as gateway:
        for _ in range(4):  # connections spread over the workers
            with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
                sock.sendall(b"POST /webhooks/w/x HTTP/1.1\r\nHost: t\r\n")
                started = time.monotonic()
                answer = sock.recv(4096)
                waited = time.monotonic() - started
            assert status(answer) == 408, answer
            assert waited < 5, f"answered after {waited:.1f} s, not after ~{timeout} s"
