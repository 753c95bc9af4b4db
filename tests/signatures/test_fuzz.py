"""Arbitrary headers, bodies, secrets and clocks: only SignatureError or ValueError escapes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS, SCHEMES, SignatureError, Verified
from tests.examples import examples

# every verifier: the custom webhook schemes, then the provider connections' ones
VERIFIERS = SCHEMES | {f"provider {name}": v for name, v in PROVIDER_VERIFIERS.items()}
NAMES = sorted(VERIFIERS)
HEADER_NAMES = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "svix-id",
    "svix-timestamp",
    "svix-signature",
    "stripe-signature",
    "x-hub-signature-256",
    "x-github-delivery",
    "x-slack-signature",
    "x-slack-request-timestamp",
    "x-shopify-hmac-sha256",
    "x-shopify-webhook-id",
    "linear-signature",
    "linear-delivery",
    "x-pagerduty-signature",
    "x-webhook-id",
    "sentry-hook-signature",
    "sentry-hook-timestamp",
    "x-vercel-signature",
    "x-gitlab-token",
    "x-gitlab-event-uuid",
    "idempotency-key",
    "x-hub-signature",
    "x-atlassian-webhook-identifier",
    "content-type",
]

# what the ingress hands over: latin-1 decodings of raw header bytes ...
latin1 = st.binary(max_size=120).map(lambda b: b.decode("latin-1"))
# ... plus arbitrary text (callers other than the ingress) ...
text = st.text(max_size=120)
# ... plus near-misses built from the schemes' own syntax (and Linear's signed body)
fragments = st.sampled_from(
    [
        "v1,",
        "v1a,",
        "v0=",
        "v1=",
        "t=",
        "sha256=",
        ",",
        " ",
        "=",
        "1700000000",
        "-1",
        "9" * 30,
        "A" * 44,
        "0" * 64,
        "0" * 40,
        "Zm9v",
        "\u00e9",
        "\x00",
        ".",
        "e9",
        "==",
        "\u0661",
        '{"webhookTimestamp":',
        "1700000000000}",
    ]
)
structured = st.lists(st.one_of(fragments, latin1), max_size=30).map("".join)
structured_bytes = structured.map(lambda text: text.encode("utf-8", "surrogatepass"))
values = st.one_of(latin1, text, structured)
header_maps = st.dictionaries(st.sampled_from(HEADER_NAMES), values, max_size=8)
clocks = st.one_of(
    st.just(1_700_000_000.0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70).map(float),
)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(300))
@given(headers=header_maps, body=st.one_of(st.binary(max_size=300), structured_bytes), now=clocks)
def test_verify_raises_only_signature_error(
    name: str, headers: dict[str, str], body: bytes, now: float
) -> None:
    scheme = VERIFIERS[name]
    key = scheme.prepare_key("whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY")
    try:
        result = scheme.verify(key, headers, body, now)
    except SignatureError as exc:
        assert str(exc)
        assert "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY" not in str(exc)
    else:  # pragma: no cover - forging a MAC by chance
        assert isinstance(result, Verified)


@pytest.mark.parametrize("name", NAMES)
@given(secret=st.one_of(text, latin1, structured, st.just("whsec_")))
def test_prepare_key_raises_only_value_error(name: str, secret: str) -> None:
    try:
        key = VERIFIERS[name].prepare_key(secret)
    except ValueError:
        return
    assert isinstance(key, bytes) and key


@pytest.mark.parametrize("name", ["standard_webhooks", "stripe", "slack"])
def test_nan_and_infinite_clocks_reject(name: str) -> None:
    scheme = SCHEMES[name]
    key = scheme.prepare_key("whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY")
    h = {
        "webhook-id": "m",
        "webhook-timestamp": "1700000000",
        "webhook-signature": "v1,x",
        "stripe-signature": "t=1700000000,v1=" + "0" * 64,
        "x-slack-request-timestamp": "1700000000",
        "x-slack-signature": "v0=" + "0" * 64,
    }
    for now in (math.nan, math.inf, -math.inf):
        with pytest.raises(SignatureError, match="timestamp"):
            scheme.verify(key, h, b"", now)
