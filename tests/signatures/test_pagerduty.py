"""pagerduty scheme. No vendor library verifies PagerDuty's signatures (the `pagerduty` and
`pdpyras` packages and `@pagerduty/pdjs` are API clients), so the oracle is PagerDuty's documented
verifier ("Verifying Signatures", the Python example), written out below, and its header format:
`v1=<hex HMAC-SHA256(body)>` entries joined by commas, one per signing secret."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("pagerduty")
SECRET = "Hh4Dvqy0k2u1aIw7W+1M1R8X0Z5v2pNwqgQ8H2tZc3mC6f9jK0sLd7e4Rb1Yx5Ua"
BODY = (
    b'{"event":{"id":"5ac64822-4adc-4fda-ade0-410becf0de4f","event_type":"incident.triggered",'
    b'"resource_type":"incident","occurred_at":"2020-10-02T18:45:22.169Z",'
    b'"data":{"id":"PGR0VU2","type":"incident","title":"A little bump in the road \\u2603"}}}'
)
WEBHOOK_ID = "b8e0e5a8-4c8e-4e9f-9d3e-9c2d7c6a5b41"
NOW = 1_700_000_000.0


class DocumentedVerifier:
    """PagerDuty's example verifier, as its documentation gives it."""

    def __init__(self, key: str, version: str) -> None:
        self.key = key
        self.version = version

    def verify(self, payload: bytes, signatures: str) -> bool:
        signature = hmac.new(self.key.encode(), payload, hashlib.sha256).hexdigest()
        signed_version = self.version + "=" + signature
        return any(hmac.compare_digest(signed_version, item) for item in signatures.split(","))


def pd_sign(body: bytes = BODY, *secrets: str) -> str:
    """The header PagerDuty sends: one v1 entry per signing secret, comma-joined."""
    return ",".join(
        "v1=" + hmac.new(s.encode(), body, hashlib.sha256).hexdigest() for s in secrets or [SECRET]
    )


def verify(h: dict[str, str], body: bytes = BODY, secret: str = SECRET) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, NOW)


def reason_of(h: dict[str, str], body: bytes = BODY) -> Reason:
    with pytest.raises(SignatureError) as refused:
        verify(h, body)
    return refused.value.reason


def test_signed_delivery_accepted_with_the_webhook_id() -> None:
    header = pd_sign()
    assert DocumentedVerifier(SECRET, "v1").verify(BODY, header)
    h = {"x-pagerduty-signature": header, "x-webhook-id": WEBHOOK_ID}
    assert verify(h) == Verified(WEBHOOK_ID)


def test_webhook_id_optional_and_no_timestamp_check() -> None:
    key = SCHEME.prepare_key(SECRET)
    h = {"x-pagerduty-signature": pd_sign()}
    assert SCHEME.verify(key, h, BODY, 0.0) == Verified(None)
    assert SCHEME.verify(key, h, BODY, 9e12) == Verified(None)


def test_rotation_either_secret_matches() -> None:
    header = pd_sign(BODY, "old-secret", SECRET)
    assert DocumentedVerifier("old-secret", "v1").verify(BODY, header)
    assert verify({"x-pagerduty-signature": header}) == Verified(None)
    assert verify({"x-pagerduty-signature": header}, secret="old-secret") == Verified(None)


def test_other_versions_are_ignored() -> None:
    v2 = "v2=" + "0" * 64
    assert verify({"x-pagerduty-signature": f"{v2},{pd_sign()},v0=zz"}) == Verified(None)
    assert reason_of({"x-pagerduty-signature": v2}) is Reason.HEADER_MALFORMED  # no v1 at all


def test_tampered_body_and_wrong_secret_rejected() -> None:
    header = pd_sign()
    assert not DocumentedVerifier(SECRET, "v1").verify(BODY + b" ", header)
    assert reason_of({"x-pagerduty-signature": header}, BODY + b" ") is Reason.SIGNATURE_MISMATCH
    wrong = pd_sign(BODY, "not-the-secret")
    assert reason_of({"x-pagerduty-signature": wrong}) is Reason.SIGNATURE_MISMATCH


def test_missing_header_rejected() -> None:
    assert reason_of({"x-webhook-id": WEBHOOK_ID}) is Reason.HEADER_MISSING
    assert reason_of({"x-pagerduty-signature": ""}) is Reason.HEADER_MISSING


@pytest.mark.parametrize(
    "header",
    [
        "garbage",
        "v1=",
        "v1=xyz",
        "v1=" + "0" * 63,
        "v1=" + "g" * 64,
        "v1=" + "\u00e9" * 64,
        "sha256=" + "0" * 64,
        ",,,",
    ],
)
def test_malformed_header_rejected(header: str) -> None:
    assert reason_of({"x-pagerduty-signature": header}) is Reason.HEADER_MALFORMED


def test_spaces_are_not_separators() -> None:
    # PagerDuty joins entries with a bare comma, and its verifiers split on it alone
    spaced = pd_sign(BODY, "old-secret") + ", " + pd_sign()
    assert not DocumentedVerifier(SECRET, "v1").verify(BODY, spaced)
    with pytest.raises(SignatureError):
        verify({"x-pagerduty-signature": spaced})


def test_a_malformed_v1_entry_rejects_the_delivery() -> None:
    header = "v1=%%%%," + pd_sign()
    assert reason_of({"x-pagerduty-signature": header}) is Reason.HEADER_MALFORMED


def test_ten_entries_accepted_eleven_rejected() -> None:
    others = [f"s{i}" for i in range(10)]
    assert verify({"x-pagerduty-signature": pd_sign(BODY, *others[:9], SECRET)}) == Verified(None)
    too_many = pd_sign(BODY, *others, SECRET)
    assert reason_of({"x-pagerduty-signature": too_many}) is Reason.HEADER_MALFORMED


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100), old=st.text())
def test_property_agrees_with_the_documented_verifier(body: bytes, secret: str, old: str) -> None:
    header = pd_sign(body, *([old] if old else []), secret)
    assert DocumentedVerifier(secret, "v1").verify(body, header)
    assert verify({"x-pagerduty-signature": header}, body, secret) == Verified(None)
    tampered = body + b"\x00"
    assert not DocumentedVerifier(secret, "v1").verify(tampered, header)
    with pytest.raises(SignatureError):
        verify({"x-pagerduty-signature": header}, tampered, secret)
