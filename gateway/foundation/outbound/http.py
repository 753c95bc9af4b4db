"""The outbound HTTP client: what the gateway calls other services with (provider APIs, event
subscribers). Its connections go to public addresses only: every connection resolves its host
here, refuses it when any address it resolves to is private, loopback, link-local, multicast,
reserved or unspecified, and connects to the address it checked (so a name that resolves
differently a moment later changes nothing). Redirects are not followed and proxies from the
environment are not used, so nothing goes past the check.

Why: the URLs come from users (a connection's `api_base_url`, a subscription's `url`); without
the check, anyone who may write one could make the gateway call its own admin ports, a cloud
metadata service (169.254.169.254) or the internal network. `GATEWAY_OUTBOUND_ALLOW_PRIVATE=1`
lifts it, for a deployment whose GitHub Enterprise or GitLab lives on the internal network, and
for tests whose stand-ins listen on loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from functools import cache
from typing import Any

import httpcore
import httpx

from gateway.foundation.outbound.outcomes import Failed

DEFAULT_TIMEOUT_S = 30.0
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedDestination(httpx.HTTPError):
    """The destination resolves to an address outbound calls may not reach."""


def refusal(address: Address) -> str | None:
    """Why `address` may not be called, None when it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal(address.ipv4_mapped)
    for reason, applies in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if applies:
            return reason
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "private"  # carrier-grade NAT (RFC 6598) is no public address either
    return None


_SHARED = ipaddress.IPv4Network("100.64.0.0/10")


def check(host: str, addresses: Iterable[str]) -> str:
    """The first of `addresses` (as resolved for `host`), when none is refused."""
    chosen: str | None = None
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        reason = refusal(address)
        if reason is not None:
            raise RefusedDestination(
                f"{host} resolves to {address}, a {reason} address: outbound calls go to public "
                "addresses only (GATEWAY_OUTBOUND_ALLOW_PRIVATE=1 allows others)"
            )
        chosen = chosen or text
    if chosen is None:
        raise httpx.ConnectError(f"{host} resolves to no address")
    return chosen


async def resolve(host: str, port: int, within_s: float | None) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        found = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), within_s
        )
    except (OSError, TimeoutError) as exc:
        raise httpx.ConnectError(f"{host}: {exc or type(exc).__name__}") from exc
    return [str(info[4][0]) for info in found]


class PublicOnly(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting to checked addresses only."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = check(host, await resolve(host, port, timeout))
        return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise RefusedDestination("outbound calls do not use Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def outbound_client(
    *, allow_private: bool, timeout: float = DEFAULT_TIMEOUT_S, user_agent: str = "gateway"
) -> httpx.AsyncClient:
    """The client outbound senders share in one process; `allow_private` is
    `settings.outbound_allow_private`."""
    transport = httpx.AsyncHTTPTransport(retries=0, verify=tls_context())
    if not allow_private:
        pool = transport._pool  # httpx builds the pool; only its network backend changes
        pool._network_backend = PublicOnly(pool._network_backend)
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": user_agent},
    )


@cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every outbound client of this process shares: certifi's roots, as httpx
    verifies by default. Made once: loading the roots costs ~20 ms of CPU, which each client
    paid again (two or three per process start)."""
    return httpx.create_ssl_context()


def refused(exc: RefusedDestination) -> Failed:
    """A refused destination as an outcome: it will not change by trying again."""
    return Failed(error=str(exc))
