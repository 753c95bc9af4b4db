"""Delivery identity: compared over its full length, and never taken from a credential or a
signature header."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.errors import InvalidRequest
from gateway.webhook_gateway.ingress.delivery_identity import MAX_IDENTITY, delivery_identity
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS, SCHEMES, SignatureError
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal
from gateway.webhook_gateway.webhooks.management import check_identity_header

# every verifier: the custom webhook schemes and the provider connections' ones
VERIFIERS = SCHEMES | {f"provider {name}": v for name, v in PROVIDER_VERIFIERS.items()}

PREFIX = "evt_" + "x" * 400
LENGTHS = (299, 300, 301, 10_240)


def identity_of(value: str) -> str:
    return delivery_identity(None, {"x-service-delivery-id": value}, None, b"{}")


def test_ids_sharing_a_long_prefix_stay_apart() -> None:
    identities = {
        identity_of(PREFIX[:n] if n <= len(PREFIX) else PREFIX + "y" * n) for n in LENGTHS
    }
    identities |= {identity_of(PREFIX[:300] + "a"), identity_of(PREFIX[:300] + "b")}
    assert len(identities) == len(LENGTHS) + 2


@pytest.mark.parametrize("length", LENGTHS)
def test_an_identity_fits_the_log_and_is_stable(length: int) -> None:
    value = ("i" * length)[:length]
    identity = identity_of(value)
    assert len(identity) <= MAX_IDENTITY
    assert identity == identity_of(value)
    if length <= MAX_IDENTITY:
        assert identity == value  # short ids are kept as sent


@given(st.text(min_size=301, max_size=2000), st.text(min_size=1, max_size=5))
def test_long_ids_differing_anywhere_differ(value: str, tail: str) -> None:
    assert identity_of(value) != identity_of(value + tail)


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "proxy-authorization",
        "Cookie",
        "X-Gitlab-Token",
        "X-Webhook-Secret",
        "X-Api-Key",
        "X-Hub-Signature",
        *sorted({h for s in VERIFIERS.values() for h in s.signature_headers}),
    ],
)
def test_credential_and_signature_headers_are_refused_with_the_field_named(name: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_identity_header(name)
    assert refused.value.status == 400
    assert refused.value.detail.startswith("delivery_id_header: ")
    assert name in refused.value.detail


@pytest.mark.parametrize(
    "name",
    [
        "X-Event-Id",
        "webhook-id",
        "svix-id",
        "Request-ID",
        "X-Author",
        *sorted({h for s in VERIFIERS.values() for h in s.delivery_id_headers}),
    ],
)
def test_event_id_headers_are_allowed(name: str) -> None:
    check_identity_header(name)  # no refusal
    assert identity_header_refusal(name) is None


class Recording(Mapping[str, str]):
    """Headers that remember every name a verifier looked up."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self.values[name]

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.read.add(name)
        return self.values.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


ALL_NAMES = sorted(
    {h for s in VERIFIERS.values() for h in (*s.signature_headers, *s.delivery_id_headers)}
)
VALUES = st.sampled_from(
    [
        "1700000000",
        "v0=" + "0" * 64,
        "sha256=" + "0" * 64,
        "v1," + "A" * 44,
        "t=1700000000,v1=" + "0" * 64,
        "0" * 64,
        "A" * 43 + "=",
        "id_1",
        "v1=" + "0" * 64,
        "0" * 40,
    ]
)


@given(st.dictionaries(st.sampled_from(ALL_NAMES), VALUES), st.sampled_from(sorted(VERIFIERS)))
def test_schemes_read_only_the_headers_they_declare(values: dict[str, str], name: str) -> None:
    """The refusal list is taken from the schemes' declarations: a scheme that read a header it
    does not declare would let that header be configured as the delivery identity."""
    scheme = VERIFIERS[name]
    headers = Recording(values)
    key = scheme.prepare_key("whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY")
    with contextlib.suppress(SignatureError):
        scheme.verify(key, headers, b"{}", 1_700_000_000.0)
    assert headers.read <= {*scheme.signature_headers, *scheme.delivery_id_headers}
