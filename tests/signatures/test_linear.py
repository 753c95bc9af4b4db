"""linear: the custom webhook scheme (signature only) and the provider connections' verifier
(signature, then the signed `webhookTimestamp`), with `@linear/sdk`'s `LinearWebhookClient` as
the oracle and signatures computed here with hmac."""

from __future__ import annotations

import base64
import hashlib
import hmac
import math

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import (
    PROVIDER_VERIFIERS,
    SignatureError,
    Verified,
    get_scheme,
)
from tests.signatures import vendor_oracle

SCHEME = get_scheme("linear")
FRESH = PROVIDER_VERIFIERS["linear"]
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


# --- the provider connections' verifier: the signed webhookTimestamp must be fresh -------------

NOW_MS = int(NOW * 1000)


def linear_body(stamp: object = NOW_MS, **extra: object) -> bytes:
    """A Linear-shaped delivery whose webhookTimestamp is `stamp` (left out when `...`)."""
    doc: dict[str, object] = {"action": "create", "type": "Issue", "data": {"id": "i1"}}
    doc.update(extra)
    if stamp is not ...:
        doc["webhookTimestamp"] = stamp
    doc["webhookId"] = "w1"
    return orjson.dumps(doc)


def fresh(body: bytes, now: float = NOW, secret: str = SECRET) -> Verified:
    h = {"linear-signature": linear_sign(body, secret), "linear-delivery": DELIVERY}
    return FRESH.verify(FRESH.prepare_key(secret), h, body, now)


def test_fresh_delivery_accepted_with_its_id_and_parsed_body() -> None:
    body = linear_body()
    verified = fresh(body)
    assert verified.delivery_id == DELIVERY
    assert verified.payload == orjson.loads(body)  # parsed once, handed on


@pytest.mark.parametrize(
    ("offset_ms", "reason"),
    [
        (-60_001, Reason.TIMESTAMP_STALE),
        (-60_000, None),
        (0, None),
        (60_000, None),
        (60_001, Reason.TIMESTAMP_FUTURE),
        (-86_400_000, Reason.TIMESTAMP_STALE),
        (86_400_000, Reason.TIMESTAMP_FUTURE),
    ],
)
def test_webhook_timestamp_within_a_minute_both_ways(offset_ms: int, reason: Reason | None) -> None:
    body = linear_body(NOW_MS + offset_ms)
    if reason is None:
        assert fresh(body).delivery_id == DELIVERY
    else:
        with pytest.raises(SignatureError) as refused:
            fresh(body)
        assert refused.value.reason is reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (linear_body(...), Reason.HEADER_MISSING),
        (linear_body(None), Reason.HEADER_MISSING),
        (linear_body(str(NOW_MS)), Reason.HEADER_MALFORMED),
        (linear_body(True), Reason.HEADER_MALFORMED),
        (linear_body([NOW_MS]), Reason.HEADER_MALFORMED),
        (b"[1, 2]", Reason.HEADER_MISSING),
        (b"not json", Reason.HEADER_MISSING),
        (b'{"webhookTimestamp": 1e999}', Reason.HEADER_MISSING),  # orjson refuses infinity
        (linear_body(..., data={"webhookTimestamp": NOW_MS}), Reason.HEADER_MISSING),
    ],
)
def test_missing_or_malformed_webhook_timestamp_rejected(body: bytes, reason: Reason) -> None:
    with pytest.raises(SignatureError) as refused:
        fresh(body)
    assert refused.value.reason is reason


def test_a_fractional_timestamp_is_a_number_like_any_other() -> None:
    assert fresh(linear_body(NOW_MS - 59_999.5)).delivery_id == DELIVERY


def test_signature_is_checked_before_the_body_is_read() -> None:
    body = b"not json at all"
    h = {"linear-signature": linear_sign(body, "other secret")}
    with pytest.raises(SignatureError) as refused:
        FRESH.verify(FRESH.prepare_key(SECRET), h, body, NOW)
    assert refused.value.reason is Reason.SIGNATURE_MISMATCH


def test_nan_and_infinite_clocks_reject() -> None:
    for now in (math.nan, math.inf, -math.inf):
        with pytest.raises(SignatureError, match="webhookTimestamp"):
            fresh(linear_body(), now=now)


@given(body=st.binary(max_size=300), now=st.floats(allow_nan=True, allow_infinity=True))
def test_any_signed_body_gives_a_verdict_or_a_signature_error(body: bytes, now: float) -> None:
    try:
        verified = fresh(body, now=now)
    except SignatureError as exc:
        assert exc.reason in {
            Reason.HEADER_MISSING,
            Reason.HEADER_MALFORMED,
            Reason.TIMESTAMP_STALE,
            Reason.TIMESTAMP_FUTURE,
        }
    else:
        assert isinstance(verified.payload, dict)


@pytest.mark.service
def test_agrees_with_linear_sdk() -> None:
    """Accept and refuse exactly where `@linear/sdk`'s verifier does, clock held at NOW."""
    bodies = [
        *(linear_body(NOW_MS + offset) for offset in (-60_001, -60_000, -1, 0, 59_999, 60_000)),
        *(linear_body(NOW_MS + offset) for offset in (60_001, -3_600_000, 3_600_000)),
        linear_body(NOW_MS - 60_000.5),
        linear_body(...),
        linear_body(None),
        linear_body(str(NOW_MS)),
        linear_body(True),
        linear_body(NOW_MS, comment="caf\u00e9 \U0001f600 \\n"),
    ]
    cases = [
        (body, signature)
        for body in bodies
        for signature in (linear_sign(body), linear_sign(body, "another secret"), "0" * 64)
    ]
    answers = vendor_oracle.ask(
        [
            {
                "op": "linear_verify",
                "secret": SECRET,
                "body_base64": base64.b64encode(body).decode(),
                "signature": signature,
                "now_ms": NOW_MS,
            }
            for body, signature in cases
        ]
    )
    key = FRESH.prepare_key(SECRET)
    verdicts = []
    for (body, signature), answer in zip(cases, answers, strict=True):
        try:
            FRESH.verify(key, {"linear-signature": signature}, body, NOW)
            verdicts.append((True, answer["valid"]))
        except SignatureError:
            verdicts.append((False, answer["valid"]))
    assert [ours for ours, _ in verdicts] == [theirs for _, theirs in verdicts]
    assert sum(ours for ours, _ in verdicts) == 6  # the six fresh bodies, rightly signed
