"""standard-webhooks scheme, with the official `standardwebhooks` and `svix` packages as oracles."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from datetime import UTC, datetime

import pytest
import standardwebhooks
import svix.webhooks
from hypothesis import given
from hypothesis import strategies as st

from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme

SCHEME = get_scheme("standard_webhooks")
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
NOW = 1_700_000_000.0
BODY = '{"type":"invoice.paid","data":{"id":"in_1","amount":1200,"note":"caf\u00e9"}}'


def official_sign(msg_id: str, ts: int, body: str, secret: str = SECRET) -> str:
    when = datetime.fromtimestamp(ts, tz=UTC)
    return standardwebhooks.Webhook(secret).sign(msg_id, when, body)


def headers(msg_id: str, ts: int | str, sig: str, prefix: str = "webhook") -> dict[str, str]:
    return {f"{prefix}-id": msg_id, f"{prefix}-timestamp": str(ts), f"{prefix}-signature": sig}


def verify(
    h: dict[str, str], body: bytes | str = BODY, secret: str = SECRET, now: float = NOW
) -> Verified:
    raw = body.encode() if isinstance(body, str) else body
    return SCHEME.verify(SCHEME.prepare_key(secret), h, raw, now)


def test_official_signature_accepted_with_delivery_id() -> None:
    sig = official_sign("msg_abc", int(NOW), BODY)
    assert verify(headers("msg_abc", int(NOW), sig)).delivery_id == "msg_abc"


def test_agrees_with_official_verifier_on_real_clock() -> None:
    now = time.time()
    sig = official_sign("msg_live", int(now), BODY)
    h = headers("msg_live", int(now), sig)
    standardwebhooks.Webhook(SECRET).verify(BODY.encode(), h, json_parse=False)
    assert verify(h, now=now).delivery_id == "msg_live"


def test_secret_without_prefix_is_base64_like_the_official_library() -> None:
    bare = SECRET.removeprefix("whsec_")
    sig = standardwebhooks.Webhook(bare).sign("m1", datetime.fromtimestamp(NOW, tz=UTC), BODY)
    assert verify(headers("m1", int(NOW), sig), secret=bare).delivery_id == "m1"
    assert SCHEME.prepare_key(bare) == SCHEME.prepare_key(SECRET)


def test_unpadded_secret_decodes_like_the_official_library() -> None:
    raw = secrets.token_bytes(31)
    unpadded = "whsec_" + base64.b64encode(raw).decode().rstrip("=")
    assert SCHEME.prepare_key(unpadded) == raw
    sig = official_sign("m2", int(NOW), BODY, unpadded)
    assert verify(headers("m2", int(NOW), sig), secret=unpadded).delivery_id == "m2"


@pytest.mark.parametrize("secret", ["", "whsec_", "   ", "whsec_not*base64!", "whsec_caf\u00e9"])
def test_unusable_secret_is_value_error(secret: str) -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key(secret)


def test_svix_signed_with_svix_aliases() -> None:
    when = datetime.fromtimestamp(NOW, tz=UTC)
    sig = svix.webhooks.Webhook(SECRET).sign("msg_svix", when, BODY)
    assert verify(headers("msg_svix", int(NOW), sig, "svix")).delivery_id == "msg_svix"


def test_our_accepts_are_svix_accepts_on_aliases() -> None:
    now = time.time()
    sig = svix.webhooks.Webhook(SECRET).sign("msg_s", datetime.fromtimestamp(now, tz=UTC), BODY)
    h = headers("msg_s", int(now), sig, "svix")
    svix.webhooks.Webhook(SECRET).verify(BODY.encode(), h)
    assert verify(h, now=now).delivery_id == "msg_s"


def test_webhook_family_wins_when_both_present() -> None:
    sig = official_sign("msg_w", int(NOW), BODY)
    h = headers("msg_w", int(NOW), sig) | headers("other", int(NOW), "v1,xxxx", "svix")
    assert verify(h).delivery_id == "msg_w"


def test_tampered_body_rejected() -> None:
    sig = official_sign("m", int(NOW), BODY)
    with pytest.raises(SignatureError, match="no matching signature"):
        verify(headers("m", int(NOW), sig), body=BODY + " ")


@pytest.mark.parametrize("field", ["id", "timestamp"])
def test_tampered_signed_header_rejected(field: str) -> None:
    sig = official_sign("m", int(NOW), BODY)
    h = headers("m2" if field == "id" else "m", int(NOW) + (1 if field == "timestamp" else 0), sig)
    with pytest.raises(SignatureError):
        verify(h)


def test_flipped_signature_bit_rejected() -> None:
    sig = official_sign("m", int(NOW), BODY)
    raw = bytearray(base64.b64decode(sig[3:]))
    raw[0] ^= 1
    with pytest.raises(SignatureError, match="no matching signature"):
        verify(headers("m", int(NOW), "v1," + base64.b64encode(bytes(raw)).decode()))


def test_wrong_secret_rejected() -> None:
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    sig = official_sign("m", int(NOW), BODY, other)
    with pytest.raises(SignatureError):
        verify(headers("m", int(NOW), sig))


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_header_rejected(missing: str) -> None:
    h = headers("m", int(NOW), official_sign("m", int(NOW), BODY))
    del h[missing]
    with pytest.raises(SignatureError):
        verify(h)


@pytest.mark.parametrize("empty", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_empty_header_rejected(empty: str) -> None:
    h = headers("m", int(NOW), official_sign("m", int(NOW), BODY))
    h[empty] = ""
    with pytest.raises(SignatureError):
        verify(h)


def test_no_headers_rejected() -> None:
    with pytest.raises(SignatureError, match="missing"):
        verify({})


@pytest.mark.parametrize(
    "sig",
    [
        "garbage",
        "v1",
        "v1,",
        "v1,not base64",
        "v1,!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
        "v1," + "A" * 43,  # wrong length
        "v1," + "A" * 10_000,
        "v1,\u00e9" * 3,
        "v1a,Zm9v",  # only other versions
        ",,,",
        " ",
    ],
)
def test_malformed_signature_header_rejected(sig: str) -> None:
    with pytest.raises(SignatureError):
        verify(headers("m", int(NOW), sig))


def test_malformed_v1_entry_rejects_even_beside_a_valid_one() -> None:
    good = official_sign("m", int(NOW), BODY)
    with pytest.raises(SignatureError, match="malformed"):
        verify(headers("m", int(NOW), f"v1,%%%% {good}"))


@pytest.mark.parametrize(
    "ts",
    [
        "abc",
        "",
        "1700000000.5",
        "-1700000000",
        "+1700000000",
        " 1700000000",
        "9" * 13,
        "9" * 5000,
        "1e9",
        "\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660",
    ],
)
def test_bad_timestamp_rejected(ts: str) -> None:
    sig = official_sign("m", int(NOW), BODY)
    with pytest.raises(SignatureError):
        verify(headers("m", ts, sig))


@pytest.mark.parametrize(
    ("offset", "ok"),
    [
        (-301, False),
        (-300, True),
        (0, True),
        (300, True),
        (301, False),
        (-86400, False),
        (86400, False),
    ],
)
def test_timestamp_window_both_ways(offset: int, ok: bool) -> None:
    ts = int(NOW) + offset
    h = headers("m", ts, official_sign("m", ts, BODY))
    if ok:
        assert verify(h).delivery_id == "m"
    else:
        with pytest.raises(SignatureError, match="timestamp"):
            verify(h)


def test_fractional_now_just_inside() -> None:
    ts = int(NOW)
    h = headers("m", ts, official_sign("m", ts, BODY))
    assert verify(h, now=NOW + 299.999).delivery_id == "m"
    with pytest.raises(SignatureError):
        verify(h, now=NOW + 300.001)


def test_rotation_any_v1_entry_matches() -> None:
    old = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    sig_old = official_sign("m", int(NOW), BODY, old)
    sig_new = official_sign("m", int(NOW), BODY)
    rotated = f"v1a,c29tZXRoaW5nZWxzZQ== {sig_old} {sig_new}"
    assert verify(headers("m", int(NOW), rotated)).delivery_id == "m"
    assert verify(headers("m", int(NOW), rotated), secret=old).delivery_id == "m"


def test_ten_entries_accepted_eleven_rejected() -> None:
    good = official_sign("m", int(NOW), BODY)
    filler = official_sign("m", int(NOW), BODY, "whsec_" + base64.b64encode(b"x" * 24).decode())
    ten = " ".join([filler] * 9 + [good])
    assert verify(headers("m", int(NOW), ten)).delivery_id == "m"
    with pytest.raises(SignatureError, match="too many"):
        verify(headers("m", int(NOW), " ".join([filler] * 10 + [good])))


def test_binary_body_is_signed_as_bytes() -> None:
    body = bytes(range(256))
    key = SCHEME.prepare_key(SECRET)
    mac = hmac.new(bytes(key), f"m.{int(NOW)}.".encode() + body, hashlib.sha256).digest()
    h = headers("m", int(NOW), "v1," + base64.b64encode(mac).decode())
    assert SCHEME.verify(key, h, body, NOW).delivery_id == "m"


@given(
    msg_id=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40),
    body=st.text(max_size=300),
    offset=st.integers(-300, 300),
    raw_secret=st.binary(min_size=1, max_size=80),
)
def test_property_official_signatures_verify_and_tampering_fails(
    msg_id: str, body: str, offset: int, raw_secret: bytes
) -> None:
    secret = "whsec_" + base64.b64encode(raw_secret).decode()
    ts = int(NOW) + offset
    h = headers(msg_id, ts, official_sign(msg_id, ts, body, secret))
    assert verify(h, body=body, secret=secret).delivery_id == msg_id
    with pytest.raises(SignatureError):
        verify(h, body=body.encode() + b"x", secret=secret)
