"""slack scheme, with `slack_sdk.signature.SignatureVerifier` as the oracle."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.signature import Clock, SignatureVerifier

from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("slack")
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
NOW = 1_700_000_000.0
BODY = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather&text=94070"


class FixedClock(Clock):
    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def slack_sign(ts: int | str, body: bytes = BODY, secret: str = SECRET) -> str:
    sig = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
    assert sig is not None
    return sig


def headers(ts: int | str, sig: str) -> dict[str, str]:
    return {"x-slack-request-timestamp": str(ts), "x-slack-signature": sig}


def verify(
    h: dict[str, str], body: bytes = BODY, secret: str = SECRET, now: float = NOW
) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, now)


def test_slack_signed_accepted_and_oracle_agrees() -> None:
    h = headers(int(NOW), slack_sign(int(NOW)))
    assert SignatureVerifier(SECRET, FixedClock(NOW)).is_valid_request(BODY, h)
    assert verify(h).delivery_id is None


@pytest.mark.parametrize(
    ("offset", "ok"),
    [
        (-301, False),
        (-300, True),
        (0, True),
        (300, True),
        (301, False),
        (-7200, False),
        (7200, False),
    ],
)
def test_timestamp_window_both_ways_matches_slack_sdk(offset: int, ok: bool) -> None:
    ts = int(NOW) + offset
    h = headers(ts, slack_sign(ts))
    assert SignatureVerifier(SECRET, FixedClock(NOW)).is_valid_request(BODY, h) is ok
    if ok:
        assert verify(h).delivery_id is None
    else:
        with pytest.raises(SignatureError, match="timestamp"):
            verify(h)


def test_tampered_body_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify(headers(int(NOW), slack_sign(int(NOW))), body=BODY + b"&x=1")


def test_tampered_timestamp_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify(headers(int(NOW) + 1, slack_sign(int(NOW))))


def test_wrong_secret_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify(headers(int(NOW), slack_sign(int(NOW), secret="another-secret")))


@pytest.mark.parametrize("missing", ["x-slack-request-timestamp", "x-slack-signature"])
def test_missing_header_rejected(missing: str) -> None:
    h = headers(int(NOW), slack_sign(int(NOW)))
    del h[missing]
    with pytest.raises(SignatureError, match="missing"):
        verify(h)


@pytest.mark.parametrize(
    ("ts", "sig"),
    [
        ("1700000000", ""),
        ("1700000000", "garbage"),
        ("1700000000", "v1=" + "0" * 64),
        ("1700000000", "v0="),
        ("1700000000", "v0=" + "z" * 64),
        ("1700000000", "v0=" + "0" * 65),
        ("1700000000", "v0=" + "0" * 64 + ",v0=" + "0" * 64),
        ("", "v0=" + "0" * 64),
        ("abc", "v0=" + "0" * 64),
        ("1700000000.0", "v0=" + "0" * 64),
        ("9" * 4000, "v0=" + "0" * 64),
        ("-1", "v0=" + "0" * 64),
    ],
)
def test_malformed_headers_rejected(ts: str, sig: str) -> None:
    with pytest.raises(SignatureError):
        verify(headers(ts, sig))


def test_non_utf8_body_signed_as_bytes() -> None:
    body = b"\xff\x00\xfe"
    mac = hmac.new(SECRET.encode(), b"v0:1700000000:" + body, hashlib.sha256).hexdigest()
    assert verify(headers("1700000000", "v0=" + mac), body=body).delivery_id is None


@given(body=st.text(max_size=300).map(str.encode), offset=st.integers(-300, 300))
def test_property_slack_signed_verifies_and_tampering_fails(body: bytes, offset: int) -> None:
    ts = int(NOW) + offset
    h = headers(ts, slack_sign(ts, body))
    assert verify(h, body=body).delivery_id is None
    with pytest.raises(SignatureError):
        verify(h, body=body + b"!")
