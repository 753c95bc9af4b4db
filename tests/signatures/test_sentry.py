"""sentry scheme. No vendor library verifies Sentry's integration webhooks (`sentry-sdk` and
`@sentry/*` report errors to Sentry), so the oracle is Sentry's own signing code, written out
below: `SentryApp.build_signature(body)` over the JSON text it sends, keyed by the client secret;
and its example app's verifier, which checks the same HMAC."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal

SCHEME = get_scheme("sentry")
CLIENT_SECRET = "2d3f8b7f1a9c4e0e8b6c5d4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e"
NOW = 1_700_000_000.0
EVENT = {
    "action": "created",
    "installation": {"uuid": "7a485448-a9e2-4c85-8a3c-4f44175783c9"},
    "data": {"issue": {"id": "1170820242", "title": "Error: caf\u00e9 \u2603", "level": "error"}},
    "actor": {"type": "application", "id": "sentry", "name": "Sentry"},
}


def build_signature(body: str, secret: str = CLIENT_SECRET) -> str:
    """Sentry's `SentryApp.build_signature`."""
    return hmac.new(
        key=secret.encode("utf-8"), msg=body.encode("utf-8"), digestmod=hashlib.sha256
    ).hexdigest()


def sentry_request(
    event: dict[str, Any], secret: str = CLIENT_SECRET
) -> tuple[bytes, dict[str, str]]:
    """What Sentry sends: the JSON text of the event, and its headers."""
    body = json.dumps(event, separators=(",", ":"))
    headers = {
        "content-type": "application/json",
        "request-id": "9d1c7e0c5b4a4f8f8b6f0a1b2c3d4e5f",
        "sentry-hook-resource": "issue",
        "sentry-hook-timestamp": str(int(NOW)),
        "sentry-hook-signature": build_signature(body, secret),
    }
    return body.encode("utf-8"), headers


def example_app_accepts(body: bytes, key: str, expected: str) -> bool:
    """Sentry's integration-platform example (backend-py): the HMAC of the compact JSON."""
    encoded = json.dumps(json.loads(body), separators=(",", ":")).encode("utf-8")
    return (
        hmac.new(key=key.encode("utf-8"), msg=encoded, digestmod=hashlib.sha256).hexdigest()
        == expected
    )


def verify(
    h: dict[str, str], body: bytes, secret: str = CLIENT_SECRET, now: float = NOW
) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, now)


def test_sentry_signed_accepted_without_delivery_id() -> None:
    body, h = sentry_request(EVENT)
    assert example_app_accepts(body, CLIENT_SECRET, h["sentry-hook-signature"])
    # Request-ID is a new UUID on every send: the body digest identifies a resend instead
    assert verify(h, body) == Verified(None)


def test_the_unsigned_timestamp_header_is_not_checked() -> None:
    body, h = sentry_request(EVENT)
    assert verify(h | {"sentry-hook-timestamp": "1"}, body) == Verified(None)
    assert verify(h, body, now=NOW + 86_400 * 365) == Verified(None)
    del h["sentry-hook-timestamp"]
    assert verify(h, body) == Verified(None)


def test_neither_the_signature_nor_the_timestamp_may_be_a_delivery_id_header() -> None:
    assert identity_header_refusal("Sentry-Hook-Signature") is not None
    refusal = identity_header_refusal("Sentry-Hook-Timestamp")
    assert refusal == "carries the sentry signature or its timestamp"
    assert identity_header_refusal("Request-ID") is None  # the operator's choice to make


def test_tampered_body_rejected() -> None:
    body, h = sentry_request(EVENT)
    tampered = body.replace(b"created", b"resolved")
    assert not example_app_accepts(tampered, CLIENT_SECRET, h["sentry-hook-signature"])
    with pytest.raises(SignatureError) as refused:
        verify(h, tampered)
    assert refused.value.reason is Reason.SIGNATURE_MISMATCH


def test_wrong_secret_rejected() -> None:
    body, h = sentry_request(EVENT, "another client secret")
    with pytest.raises(SignatureError, match="no matching"):
        verify(h, body)


def test_uppercase_hex_accepted() -> None:
    body, h = sentry_request(EVENT)
    upper = h | {"sentry-hook-signature": h["sentry-hook-signature"].upper()}
    assert verify(upper, body) == Verified(None)


@pytest.mark.parametrize(
    "signature",
    ["garbage", "0" * 63, "g" * 64, "sha256=" + "0" * 64, "0" * 40, "\u00e9" * 64, " " + "0" * 63],
)
def test_malformed_signature_rejected(signature: str) -> None:
    body, h = sentry_request(EVENT)
    with pytest.raises(SignatureError) as refused:
        verify(h | {"sentry-hook-signature": signature}, body)
    assert refused.value.reason is Reason.HEADER_MALFORMED


@pytest.mark.parametrize("value", [None, ""])
def test_missing_signature_rejected(value: str | None) -> None:
    body, h = sentry_request(EVENT)
    if value is None:
        del h["sentry-hook-signature"]
    else:
        h["sentry-hook-signature"] = value
    with pytest.raises(SignatureError) as refused:
        verify(h, body)
    assert refused.value.reason is Reason.HEADER_MISSING


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(data=json_values, secret=st.text(min_size=1, max_size=80))
def test_property_sentry_signed_verifies_and_tampering_fails(data: object, secret: str) -> None:
    body, h = sentry_request({"action": "created", "data": data}, secret)
    assert verify(h, body, secret) == Verified(None)
    with pytest.raises(SignatureError):
        verify(h, body + b" ", secret)
