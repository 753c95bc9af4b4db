"""The GitLab verifier of provider connections: `X-Gitlab-Token` is the secret itself, compared in
constant time; the delivery id is `Idempotency-Key` (kept across retries), else
`X-Gitlab-Event-UUID`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS, SignatureError, Verified
from gateway.webhook_gateway.signatures.identity_headers import identity_header_refusal

GITLAB = PROVIDER_VERIFIERS["gitlab"]
SECRET = "glwt-3f9a7c1e5b2d4f6a8c0e"
BODY = b'{"object_kind":"push","ref":"refs/heads/main"}'
NOW = 1_700_000_000.0
KEY = "9a1f7c2e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"
EVENT = "13792a34-cac6-4fda-95a8-c58e00a3954e"


def verify(h: dict[str, str], secret: str = SECRET) -> Verified:
    return GITLAB.verify(GITLAB.prepare_key(secret), h, BODY, NOW)


def reason_of(h: dict[str, str], secret: str = SECRET) -> Reason:
    with pytest.raises(SignatureError) as refused:
        verify(h, secret)
    return refused.value.reason


def test_the_token_authenticates_and_idempotency_key_identifies() -> None:
    h = {"x-gitlab-token": SECRET, "idempotency-key": KEY, "x-gitlab-event-uuid": EVENT}
    assert verify(h) == Verified(KEY)


def test_event_uuid_when_gitlab_sends_no_idempotency_key() -> None:
    assert verify({"x-gitlab-token": SECRET, "x-gitlab-event-uuid": EVENT}) == Verified(EVENT)
    assert verify({"x-gitlab-token": SECRET}) == Verified(None)


@pytest.mark.parametrize(
    "token", [SECRET + " ", " " + SECRET, SECRET[:-1], SECRET.upper(), "Bearer " + SECRET]
)
def test_any_other_token_rejected(token: str) -> None:
    assert reason_of({"x-gitlab-token": token}) is Reason.TOKEN_UNKNOWN


def test_missing_token_rejected() -> None:
    assert reason_of({"x-gitlab-event-uuid": EVENT}) is Reason.HEADER_MISSING
    assert reason_of({"x-gitlab-token": ""}) is Reason.HEADER_MISSING


def test_a_non_ascii_token_is_compared_as_the_bytes_sent() -> None:
    secret = "caf\u00e9-token"
    # the ingress hands header values over as the latin-1 decoding of the raw bytes
    sent = secret.encode("utf-8").decode("latin-1")
    assert verify({"x-gitlab-token": sent}, secret) == Verified(None)
    assert reason_of({"x-gitlab-token": secret}, secret) is Reason.TOKEN_UNKNOWN
    assert reason_of({"x-gitlab-token": "\u2603"}, secret) is Reason.HEADER_MALFORMED


def test_the_token_header_may_not_be_a_delivery_id_header() -> None:
    assert identity_header_refusal("X-Gitlab-Token") is not None
    assert identity_header_refusal("Idempotency-Key") is None


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        GITLAB.prepare_key("")


@given(secret=st.text(min_size=1, max_size=100), other=st.text(max_size=100))
def test_property_only_the_secret_passes(secret: str, other: str) -> None:
    sent = secret.encode().decode("latin-1")
    assert verify({"x-gitlab-token": sent}, secret) == Verified(None)
    if other != secret:
        with pytest.raises(SignatureError):
            verify({"x-gitlab-token": other.encode().decode("latin-1")}, secret)
