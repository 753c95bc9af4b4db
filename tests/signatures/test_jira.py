"""The Jira verifier of provider connections: Jira Cloud admin webhooks saved with a secret send
`X-Hub-Signature: sha256=<hex HMAC-SHA256(body)>` (the WebSub form; computed here with hmac, as
Atlassian documents it); the delivery id is `X-Atlassian-Webhook-Identifier`."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS, SignatureError, Verified

JIRA = PROVIDER_VERIFIERS["jira"]
SECRET = "kZ3vQ8wX1yB5nM7cR2tF"
BODY = (
    b'{"timestamp":1700000000000,"webhookEvent":"jira:issue_created",'
    b'"issue":{"id":"10002","key":"ENG-42","fields":{"summary":"caf\xc3\xa9","labels":["bug"]}}}'
)
IDENTIFIER = "3d5c3e0c-9f7a-4b1e-a2d6-5c8b7a9e1f04"
NOW = 1_700_000_000.0


def jira_sign(body: bytes = BODY, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(h: dict[str, str], body: bytes = BODY, secret: str = SECRET) -> Verified:
    return JIRA.verify(JIRA.prepare_key(secret), h, body, NOW)


def reason_of(h: dict[str, str], body: bytes = BODY) -> Reason:
    with pytest.raises(SignatureError) as refused:
        verify(h, body)
    return refused.value.reason


def test_signed_delivery_accepted_with_its_identifier() -> None:
    h = {"x-hub-signature": jira_sign(), "x-atlassian-webhook-identifier": IDENTIFIER}
    assert verify(h) == Verified(IDENTIFIER)
    assert verify({"x-hub-signature": jira_sign()}) == Verified(None)


def test_tampered_body_and_wrong_secret_rejected() -> None:
    assert reason_of({"x-hub-signature": jira_sign()}, BODY + b" ") is Reason.SIGNATURE_MISMATCH
    assert reason_of({"x-hub-signature": jira_sign(secret="x")}) is Reason.SIGNATURE_MISMATCH


def test_github_s_header_is_not_jira_s() -> None:
    assert reason_of({"x-hub-signature-256": jira_sign()}) is Reason.HEADER_MISSING


@pytest.mark.parametrize(
    "signature",
    [
        "garbage",
        "sha1=" + hmac.new(SECRET.encode(), BODY, hashlib.sha1).hexdigest(),
        "SHA256=" + "0" * 64,
        "sha256=" + "0" * 63,
        "sha256=" + "g" * 64,
        "0" * 64,
    ],
)
def test_malformed_signature_rejected(signature: str) -> None:
    assert reason_of({"x-hub-signature": signature}) is Reason.HEADER_MALFORMED


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        JIRA.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100))
def test_property_valid_verifies_and_tampering_fails(body: bytes, secret: str) -> None:
    h = {"x-hub-signature": jira_sign(body, secret)}
    assert verify(h, body, secret) == Verified(None)
    with pytest.raises(SignatureError):
        verify(h, body + b"}", secret)
