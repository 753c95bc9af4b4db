"""The outbound HTTP client calls public addresses only, unless private ones are allowed: the
check is on the address each connection resolves to, and redirects are not followed."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gateway.foundation.outbound import RefusedDestination, outbound_client
from gateway.foundation.outbound.http import refusal


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("100.64.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("140.82.112.3", None),  # api.github.com
        ("2606:4700::6810:84e5", None),
    ],
)
def test_which_addresses_are_refused(address: str, reason: str | None) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


class _Redirect(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(302 if self.path == "/away" else 200)
        self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_is_refused_by_default(local_server: int, host: str) -> None:
    async with outbound_client(allow_private=False) as http:
        with pytest.raises(RefusedDestination, match="a loopback address"):
            await http.get(f"http://{host}:{local_server}/")


async def test_allowed_private_addresses_are_called(local_server: int) -> None:
    async with outbound_client(allow_private=True) as http:
        answer = await http.get(f"http://localhost:{local_server}/")
    assert (answer.status_code, answer.text) == (200, "ok")


async def test_redirects_are_not_followed(local_server: int) -> None:
    async with outbound_client(allow_private=True) as http:
        answer = await http.get(f"http://127.0.0.1:{local_server}/away")
    assert answer.status_code == 302  # never to the metadata address it points at


async def test_proxies_from_the_environment_are_not_used(
    local_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://10.0.0.1:3128")
    async with outbound_client(allow_private=True) as http:
        answer = await http.get(f"http://127.0.0.1:{local_server}/")
    assert answer.status_code == 200
