"""vercel scheme. No vendor library verifies Vercel's webhooks (`@vercel/sdk` and the `vercel`
package are API clients), so the oracle is the algorithm Vercel documents, written out here with
hashlib: `x-vercel-signature` is the hex HMAC-SHA1 of the raw body, keyed by the secret."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("vercel")
SECRET = "h7JkR2mQ9xWvT4pL0sN8bC6yF3dG1aZe"
BODY = (
    b'{"id":"evt_2sxu1p6QG2hHPdnvK3ZkRwq5","type":"deployment.succeeded",'
    b'"createdAt":1700000000000,"payload":{"deployment":{"id":"dpl_89qyp1cskzkLrVicDaZoDbjyHuDJ",'
    b'"name":"caf\xc3\xa9","url":"my-app-git-main.vercel.app"}}}'
)
NOW = 1_700_000_000.0


def vercel_sign(body: bytes = BODY, secret: str = SECRET) -> str:
    """As Vercel's docs compute it, in Node:
    `crypto.createHmac('sha1', secret).update(rawBody).digest('hex')`."""
    return hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()


def verify(h: dict[str, str], body: bytes = BODY, secret: str = SECRET) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, NOW)


def reason_of(h: dict[str, str], body: bytes = BODY) -> Reason:
    with pytest.raises(SignatureError) as refused:
        verify(h, body)
    return refused.value.reason


def test_vercel_signed_accepted_without_delivery_id() -> None:
    # the event id is in the body: a resend of the same event has the same body digest
    assert verify({"x-vercel-signature": vercel_sign()}) == Verified(None)


def test_upper_case_hex_accepted_and_no_timestamp_check() -> None:
    key = SCHEME.prepare_key(SECRET)
    h = {"x-vercel-signature": vercel_sign().upper()}
    assert SCHEME.verify(key, h, BODY, 0.0) == Verified(None)


def test_tampered_body_and_wrong_secret_rejected() -> None:
    assert (
        reason_of({"x-vercel-signature": vercel_sign()}, BODY + b"\n") is Reason.SIGNATURE_MISMATCH
    )
    wrong = vercel_sign(secret="the integration's other secret")
    assert reason_of({"x-vercel-signature": wrong}) is Reason.SIGNATURE_MISMATCH


def test_sha256_is_not_sha1() -> None:
    sha256 = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    assert reason_of({"x-vercel-signature": sha256}) is Reason.HEADER_MALFORMED


@pytest.mark.parametrize(
    "signature",
    ["garbage", "0" * 39, "0" * 41, "z" * 40, "sha1=" + "0" * 40, "\u00e9" * 40, "0" * 4000],
)
def test_malformed_signature_rejected(signature: str) -> None:
    assert reason_of({"x-vercel-signature": signature}) is Reason.HEADER_MALFORMED


def test_missing_signature_rejected() -> None:
    assert reason_of({}) is Reason.HEADER_MISSING
    assert reason_of({"x-vercel-signature": ""}) is Reason.HEADER_MISSING


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100))
def test_property_valid_verifies_and_tampering_fails(body: bytes, secret: str) -> None:
    h = {"x-vercel-signature": vercel_sign(body, secret)}
    assert verify(h, body, secret) == Verified(None)
    with pytest.raises(SignatureError):
        verify(h, b"\x00" + body, secret)
