"""The scheme registry, the shared interface and the HMAC fast path."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gateway.webhook_gateway.signatures as signatures
from gateway.webhook_gateway.signatures import (
    PROVIDER_VERIFIERS,
    SCHEMES,
    SignatureScheme,
    Verified,
    get_scheme,
    linear,
    scheme_name,
)
from gateway.webhook_gateway.signatures.base import hmac_of_body, hmac_sha256

# the names factory files write (CONTRACT §5), and our extras
EXPECTED = {
    "standard_webhooks",
    "github",
    "stripe",
    "pagerduty",
    "sentry",
    "vercel",
    "slack",
    "shopify",
    "linear",
}


def test_registry_names() -> None:
    assert set(SCHEMES) == EXPECTED
    for name, scheme in SCHEMES.items():
        assert scheme.name == name
        assert get_scheme(name) is scheme
        assert scheme_name(name) == name


def test_the_hyphenated_standard_webhooks_is_an_alias() -> None:
    assert scheme_name("standard-webhooks") == "standard_webhooks"
    assert get_scheme("standard-webhooks") is SCHEMES["standard_webhooks"]


@pytest.mark.parametrize("name", ["md5", "Standard_Webhooks", "standard webhooks", "gitlab", ""])
def test_unknown_scheme_is_key_error(name: str) -> None:
    with pytest.raises(KeyError, match="unknown signature scheme"):
        get_scheme(name)
    with pytest.raises(KeyError, match="unknown signature scheme"):
        scheme_name(name)


def test_provider_verifiers() -> None:
    assert set(PROVIDER_VERIFIERS) == {"github", "gitlab", "slack", "linear", "jira"}
    assert PROVIDER_VERIFIERS["github"] is SCHEMES["github"]
    assert PROVIDER_VERIFIERS["slack"] is SCHEMES["slack"]
    # a provider connection checks Linear's signed webhookTimestamp; a custom webhook does not
    assert PROVIDER_VERIFIERS["linear"] is linear.FRESH
    assert SCHEMES["linear"] is linear.SCHEME
    for name, verifier in PROVIDER_VERIFIERS.items():
        assert verifier.name == name


def test_all_is_sorted_and_exported() -> None:
    # ruff's RUF022 order: SCREAMING_CASE, then CamelCase, then lowercase
    def key(n: str) -> tuple[int, str]:
        return (0 if n.isupper() else 1 if n[0].isupper() else 2, n)

    assert signatures.__all__ == sorted(signatures.__all__, key=key)
    for name in signatures.__all__:
        assert hasattr(signatures, name)


def test_verified_is_frozen() -> None:
    v = Verified("d")
    with pytest.raises(AttributeError):
        v.delivery_id = "x"  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_prepared_keys_are_bytes(name: str) -> None:
    scheme: SignatureScheme = get_scheme(name)
    key = scheme.prepare_key("whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY")
    assert isinstance(key, bytes)


@given(key=st.binary(min_size=1, max_size=200), head=st.binary(max_size=40), body=st.binary())
def test_hmac_without_concatenating_equals_stdlib(key: bytes, head: bytes, body: bytes) -> None:
    assert hmac_sha256(key, head, body) == hmac.new(key, head + body, hashlib.sha256).digest()


def test_hmac_of_a_key_longer_than_a_block() -> None:
    k = b"k" * 100  # longer than a block: hashed first, as RFC 2104 says
    assert hmac_sha256(k, b"a", b"b") == hmac.digest(k, b"ab", "sha256")


@given(key=st.binary(min_size=1, max_size=200), body=st.binary())
def test_hmac_of_body_equals_stdlib(key: bytes, body: bytes) -> None:
    for algorithm in ("sha256", "sha1"):
        assert hmac_of_body(key, body, algorithm) == hmac.digest(key, body, algorithm)
