"""stripe scheme, with the `stripe` package as the oracle."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest
import stripe
from hypothesis import given
from hypothesis import strategies as st

from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("stripe")
SECRET = "whsec_test_5f8e2b9c1d7a4e6f0b3c8d2a9e1f7b4c"
NOW = 1_700_000_000.0
BODY = '{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"object":{}}}'


def stripe_header(body: str, ts: int, secret: str = SECRET) -> str:
    header: str = stripe.WebhookSignature.generate_signature_header(body, secret, timestamp=ts)
    return header


def v1(body: str, ts: int, secret: str = SECRET) -> str:
    return stripe_header(body, ts, secret).split(",")[1]


def verify(
    header: str | None, body: bytes | str = BODY, secret: str = SECRET, now: float = NOW
) -> Verified:
    raw = body.encode() if isinstance(body, str) else body
    h = {} if header is None else {"stripe-signature": header}
    return SCHEME.verify(SCHEME.prepare_key(secret), h, raw, now)


def test_stripe_signed_accepted_without_delivery_id() -> None:
    assert verify(stripe_header(BODY, int(NOW))).delivery_id is None


def test_agrees_with_stripe_construct_event_on_real_clock() -> None:
    now = time.time()
    header = stripe_header(BODY, int(now))
    event = stripe.Webhook.construct_event(BODY, header, SECRET, tolerance=300)
    assert event.id == "evt_1"
    assert verify(header, now=now).delivery_id is None


def test_key_is_the_whole_whsec_string() -> None:
    assert SCHEME.prepare_key(SECRET) == SECRET.encode()
    ts = int(NOW)
    mac = hmac.new(SECRET.encode(), f"{ts}.{BODY}".encode(), hashlib.sha256).hexdigest()
    assert verify(f"t={ts},v1={mac}").delivery_id is None


def test_future_timestamp_accepted_by_stripe_but_rejected_by_us() -> None:
    now = time.time()
    future = int(now) + 3600
    header = stripe_header(BODY, future)
    assert stripe.WebhookSignature.verify_header(BODY, header, SECRET, tolerance=300) is True
    with pytest.raises(SignatureError, match="future"):
        verify(header, now=now)


def test_old_timestamp_rejected_by_both() -> None:
    now = time.time()
    header = stripe_header(BODY, int(now) - 3600)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(BODY, header, SECRET, tolerance=300)
    with pytest.raises(SignatureError, match="too old"):
        verify(header, now=now)


@pytest.mark.parametrize(
    ("offset", "ok"), [(-301, False), (-300, True), (0, True), (300, True), (301, False)]
)
def test_timestamp_window_both_ways(offset: int, ok: bool) -> None:
    header = stripe_header(BODY, int(NOW) + offset)
    if ok:
        assert verify(header).delivery_id is None
    else:
        with pytest.raises(SignatureError, match="timestamp"):
            verify(header)


def test_tampered_body_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify(stripe_header(BODY, int(NOW)), body=BODY.replace("evt_1", "evt_2"))


def test_tampered_timestamp_rejected() -> None:
    header = stripe_header(BODY, int(NOW)).replace(f"t={int(NOW)}", f"t={int(NOW) + 1}")
    with pytest.raises(SignatureError, match="no matching"):
        verify(header)


def test_wrong_secret_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify(stripe_header(BODY, int(NOW), "whsec_other"))


def test_rotation_any_v1_matches_and_v0_ignored() -> None:
    ts = int(NOW)
    header = f"t={ts},{v1(BODY, ts, 'whsec_old')},{v1(BODY, ts)},v0={'0' * 64}"
    assert verify(header).delivery_id is None
    assert verify(header, secret="whsec_old").delivery_id is None


def test_v0_alone_is_not_enough() -> None:
    ts = int(NOW)
    v0 = v1(BODY, ts).replace("v1=", "v0=")
    with pytest.raises(SignatureError, match="no v1"):
        verify(f"t={ts},{v0}")


def test_ten_signatures_accepted_eleven_rejected() -> None:
    ts = int(NOW)
    bad = v1(BODY, ts, "whsec_x")
    assert verify(",".join([f"t={ts}", *[bad] * 9, v1(BODY, ts)])).delivery_id is None
    with pytest.raises(SignatureError, match="too many"):
        verify(",".join([f"t={ts}", *[bad] * 10, v1(BODY, ts)]))


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "garbage",
        "t=1700000000",  # no v1
        "v1=" + "0" * 64,  # no t
        "t=,v1=" + "0" * 64,
        "t=abc,v1=" + "0" * 64,
        "t=1700000000.0,v1=" + "0" * 64,
        "t=" + "9" * 40 + ",v1=" + "0" * 64,
        "t=-1,v1=" + "0" * 64,
        "t=1700000000,t=1700000000,v1=" + "0" * 64,
        "t=1700000000,v1=",
        "t=1700000000,v1=xyz",
        "t=1700000000,v1=" + "g" * 64,
        "t=1700000000,v1=" + "0" * 63,
        "t=1700000000,v1=" + "\u00e9" * 64,
        "t=1700000000,,v1=" + "0" * 64,
        "t=1700000000,v1" + "0" * 64,
        ",,,,,,,,,,,,,,,,,,,,,",
    ],
)
def test_malformed_header_rejected(header: str | None) -> None:
    with pytest.raises(SignatureError):
        verify(header)


def test_non_utf8_body_is_fine_as_bytes() -> None:
    body = b"\xff\xfe\x00binary"
    ts = int(NOW)
    mac = hmac.new(SECRET.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    assert verify(f"t={ts},v1={mac}", body=body).delivery_id is None
    with pytest.raises(SignatureError):
        verify(f"t={ts},v1={mac}", body=body + b"\x00")


@pytest.mark.parametrize("secret", [""])
def test_unusable_secret_is_value_error(secret: str) -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key(secret)


@given(body=st.text(max_size=300), offset=st.integers(-300, 300), secret=st.text(min_size=1))
def test_property_stripe_signed_verifies_and_tampering_fails(
    body: str, offset: int, secret: str
) -> None:
    header = stripe_header(body, int(NOW) + offset, secret)
    assert verify(header, body=body, secret=secret).delivery_id is None
    with pytest.raises(SignatureError):
        verify(header, body=body + "x", secret=secret)
