"""linear scheme; expected signatures computed here with hmac, independently of the module."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("linear")
SECRET = "lin_wh_0123456789abcdef0123456789abcdef"
BODY = b'{"action":"create","type":"Issue","webhookTimestamp":1700000000000}'
DELIVERY = "234d1a4e-b617-4388-90fe-adc3633d6b72"
NOW = 1_700_000_000.0


def linear_sign(body: bytes = BODY, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(
    h: dict[str, str], body: bytes = BODY, secret: str = SECRET, now: float = NOW
) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, now)


def test_valid_signature_accepted_with_delivery_id() -> None:
    h = {"linear-signature": linear_sign(), "linear-delivery": DELIVERY}
    assert verify(h).delivery_id == DELIVERY


def test_body_webhook_timestamp_is_not_checked() -> None:
    # no JSON parsing before authentication: an old webhookTimestamp in the body still passes
    h = {"linear-signature": linear_sign()}
    assert verify(h, now=NOW + 86400 * 365).delivery_id is None


def test_not_json_is_fine() -> None:
    body = b"\xff not json"
    assert verify({"linear-signature": linear_sign(body)}, body=body).delivery_id is None


def test_tampered_body_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"linear-signature": linear_sign()}, body=BODY.replace(b"create", b"remove"))


def test_wrong_secret_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"linear-signature": linear_sign(secret="x")})


@pytest.mark.parametrize(
    "sig", ["", "garbage", "sha256=" + "0" * 64, "0" * 63, "z" * 64, "\u00e9" * 64, "0" * 6400]
)
def test_malformed_header_rejected(sig: str) -> None:
    with pytest.raises(SignatureError):
        verify({"linear-signature": sig})


def test_missing_header_rejected() -> None:
    with pytest.raises(SignatureError, match="missing"):
        verify({"linear-delivery": DELIVERY})


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100))
def test_property_valid_verifies_and_tampering_fails(body: bytes, secret: str) -> None:
    h = {"linear-signature": linear_sign(body, secret)}
    assert verify(h, body=body, secret=secret).delivery_id is None
    with pytest.raises(SignatureError):
        verify(h, body=body + b"}", secret=secret)
