"""shopify scheme; expected signatures computed here with hmac, independently of the module."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("shopify")
SECRET = "shpss_0123456789abcdef0123456789abcdef"
BODY = b'{"id":820982911946154508,"email":"jon@example.com"}'
DELIVERY = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
NOW = 1_700_000_000.0


def shopify_sign(body: bytes = BODY, secret: str = SECRET) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def verify(h: dict[str, str], body: bytes = BODY, secret: str = SECRET) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, NOW)


def test_valid_signature_accepted_with_delivery_id() -> None:
    h = {"x-shopify-hmac-sha256": shopify_sign(), "x-shopify-webhook-id": DELIVERY}
    assert verify(h).delivery_id == DELIVERY


def test_delivery_id_optional_and_no_timestamp_check() -> None:
    key = SCHEME.prepare_key(SECRET)
    h = {"x-shopify-hmac-sha256": shopify_sign()}
    assert SCHEME.verify(key, h, BODY, 0.0).delivery_id is None


def test_tampered_body_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"x-shopify-hmac-sha256": shopify_sign()}, body=BODY[:-1])


def test_wrong_secret_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"x-shopify-hmac-sha256": shopify_sign(secret="other")})


def test_hex_instead_of_base64_rejected() -> None:
    hexsig = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    with pytest.raises(SignatureError, match="malformed"):
        verify({"x-shopify-hmac-sha256": hexsig})


@pytest.mark.parametrize(
    "sig",
    [
        "",
        "garbage",
        "A" * 43,
        "A" * 45,
        "!" * 44,
        "\u00e9" * 44,
        "A" * 43 + "\n",
        "=" * 44,
        "A" * 42 + "=A",
    ],
)
def test_malformed_header_rejected(sig: str) -> None:
    with pytest.raises(SignatureError):
        verify({"x-shopify-hmac-sha256": sig})


def test_missing_header_rejected() -> None:
    with pytest.raises(SignatureError, match="missing"):
        verify({"x-shopify-webhook-id": DELIVERY})


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100))
def test_property_valid_verifies_and_tampering_fails(body: bytes, secret: str) -> None:
    h = {"x-shopify-hmac-sha256": shopify_sign(body, secret), "x-shopify-webhook-id": "d"}
    assert verify(h, body=body, secret=secret).delivery_id == "d"
    with pytest.raises(SignatureError):
        verify(h, body=b"\x00" + body, secret=secret)
