"""GATEWAY_TRUSTED_PROXIES: whose forwarded headers are believed, and what they say.

`X-Forwarded-For` and `X-Forwarded-Proto` are read only when the TCP peer is a trusted proxy;
from any other peer they could be anyone's invention. The client's address is then the
right-most `X-Forwarded-For` hop that is not itself a trusted proxy (anything to its left the
client could have forged), and the scheme it used is the right-most `X-Forwarded-Proto` value
(the one the nearest proxy set). The failed-auth budget and the console both ask here.

`X-Forwarded-For` from a peer that is not trusted is logged once per peer: it is either a load
balancer missing from the setting (then every sender behind it shares one source address, and
one failed-auth budget) or a client making things up.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# peers warned about, per process; past this many, further ones are not reported (a flood of
# forged headers from many addresses must not grow memory)
MAX_WARNED_PEERS = 1024
SCHEMES = ("http", "https")

log = logging.getLogger("gateway.proxies")


class TrustedProxies:
    __slots__ = ("_warned", "networks")

    def __init__(self, networks: Sequence[Network] = ()) -> None:
        self.networks = tuple(networks)
        self._warned: set[str] = set()

    def trusts(self, address: str | None) -> bool:
        if not self.networks or address is None:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def client(self, peer: str | None, forwarded_for: str | None) -> str:
        """The client's address as far as it can be told: the peer, or when the peer is a trusted
        proxy, the right-most `X-Forwarded-For` hop it does not trust."""
        address = peer or "unknown"
        if forwarded_for is None:
            return address
        if not self.trusts(peer):
            self._warn_untrusted(address)
            return address
        for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
            if not self.trusts(hop):
                return hop[:64]
            address = hop
        return address

    def scheme(self, peer: str | None, scheme: str, forwarded_proto: str | None) -> str:
        """The scheme the client used: `scheme` (the connection's), or a trusted proxy's word."""
        if forwarded_proto is None or not self.trusts(peer):
            return scheme
        nearest = forwarded_proto.rsplit(",", 1)[-1].strip().lower()
        return nearest if nearest in SCHEMES else scheme

    def _warn_untrusted(self, peer: str) -> None:
        if peer in self._warned or len(self._warned) >= MAX_WARNED_PEERS:
            return
        self._warned.add(peer)
        log.warning(
            "X-Forwarded-For from %s, which is not in GATEWAY_TRUSTED_PROXIES: ignored, %s "
            "stands for the sender (if it is your load balancer, every sender behind it shares "
            "one failed-auth budget: add it to GATEWAY_TRUSTED_PROXIES, see docs/operations.md); "
            "logged once per address",
            peer,
            peer,
        )
