from __future__ import annotations

import ipaddress
import logging

import pytest

from gateway.http.trusted_proxies import MAX_WARNED_PEERS, TrustedProxies

LB = TrustedProxies((ipaddress.ip_network("10.0.0.0/8"),))


def test_the_client_is_read_from_trusted_proxies_only() -> None:
    assert LB.client("1.2.3.4", "9.9.9.9") == "1.2.3.4"  # peer not a proxy
    assert TrustedProxies().client("10.0.0.1", "9.9.9.9") == "10.0.0.1"  # no proxies configured
    assert LB.client("10.0.0.1", "6.6.6.6, 9.9.9.9") == "9.9.9.9"
    assert LB.client("10.0.0.1", "6.6.6.6, 9.9.9.9, 10.0.0.7") == "9.9.9.9"
    assert LB.client("10.0.0.1", "10.0.0.9") == "10.0.0.9"
    assert LB.client("10.0.0.1", None) == "10.0.0.1"
    assert LB.client(None, None) == "unknown"


def test_the_scheme_is_a_trusted_proxys_word_only() -> None:
    assert LB.scheme("10.0.0.1", "http", "https") == "https"
    assert LB.scheme("10.0.0.1", "http", "HTTPS ") == "https"
    # the nearest proxy's value counts; what the client sent to its left does not
    assert LB.scheme("10.0.0.1", "http", "https, http") == "http"
    assert LB.scheme("10.0.0.1", "http", "gopher") == "http"
    assert LB.scheme("10.0.0.1", "http", None) == "http"
    assert LB.scheme("1.2.3.4", "http", "https") == "http"  # anyone else's word: ignored
    assert TrustedProxies().scheme("127.0.0.1", "http", "https") == "http"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.proxies"]


def test_forwarded_for_from_an_untrusted_peer_is_warned_about_once_per_peer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxies = TrustedProxies((ipaddress.ip_network("10.0.0.0/8"),))
    with caplog.at_level(logging.WARNING, logger="gateway.proxies"):
        for _ in range(3):
            proxies.client("192.0.2.7", "9.9.9.9")
            proxies.client("192.0.2.8", "9.9.9.9")
        proxies.client("10.0.0.1", "9.9.9.9")  # a trusted proxy: nothing to say
        proxies.client("192.0.2.9", None)  # no header: nothing to say
    warned = _warnings(caplog)
    assert len(warned) == 2
    assert warned[0].startswith("X-Forwarded-For from 192.0.2.7, which is not in ")
    assert "GATEWAY_TRUSTED_PROXIES" in warned[0] and "192.0.2.8" in warned[1]


def test_the_warned_peers_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    proxies = TrustedProxies()
    with caplog.at_level(logging.WARNING, logger="gateway.proxies"):
        for n in range(MAX_WARNED_PEERS + 10):
            proxies.client(str(ipaddress.ip_address(n + 1)), "9.9.9.9")
    assert len(_warnings(caplog)) == MAX_WARNED_PEERS
