"""The sender's address: the peer, or the right-most untrusted X-Forwarded-For hop when the peer
is a trusted proxy. The failed-auth budget is keyed on it."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def source_address(peer: str | None, forwarded_for: str | None, proxies: Sequence[Network]) -> str:
    address = peer or "unknown"
    if not proxies or forwarded_for is None or not _trusted(address, proxies):
        return address
    # walk from the right: every hop a trusted proxy appended is skipped; the first hop we do not
    # trust is the client as far as we can tell (anything left of it the client could forge)
    for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
        if not _trusted(hop, proxies):
            return hop[:64]
        address = hop
    return address
