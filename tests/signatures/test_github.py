"""github scheme: GitHub's documented example, `@octokit/webhooks-methods` (GitHub's own
JavaScript library) as the oracle, and signatures computed here with hmac."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.webhook_gateway.signatures import SignatureError, Verified, get_scheme
from tests.signatures import vendor_oracle

SCHEME = get_scheme("github")
SECRET = "It's a Secret to Everybody"
BODY = b'{"action":"opened","number":1}'
DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
NOW = 1_700_000_000.0


def gh_sign(body: bytes = BODY, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(h: dict[str, str], body: bytes = BODY, secret: str = SECRET) -> Verified:
    return SCHEME.verify(SCHEME.prepare_key(secret), h, body, NOW)


def test_github_docs_example() -> None:
    # the worked example from GitHub's "Validating webhook deliveries" documentation
    sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    h = {"x-hub-signature-256": sig, "x-github-delivery": DELIVERY}
    assert verify(h, body=b"Hello, World!").delivery_id == DELIVERY


# secrets and payloads for the oracle (which refuses an empty payload): short, unicode, long,
# JSON with escapes and characters beyond the BMP
ORACLE_SECRETS = ["s", SECRET, "caf\u00e9 \u2603 secret", "x" * 300]
ORACLE_PAYLOADS = [
    "Hello, World!",
    BODY.decode(),
    '{"comment":{"body":"caf\u00e9 \\u00e9 \\n \U0001f600"}}',
    "{}" * 5000,
]


@pytest.mark.service
def test_agrees_with_octokit_webhooks_methods() -> None:
    """Whatever GitHub's library signs, the scheme accepts; what the library refuses (another
    secret, another payload), the scheme refuses."""
    cases = [(s, p) for s in ORACLE_SECRETS for p in ORACLE_PAYLOADS]
    signed = vendor_oracle.ask([{"op": "github_sign", "secret": s, "payload": p} for s, p in cases])
    checks = []
    for (secret, payload), answer in zip(cases, signed, strict=True):
        signature = answer["signature"]
        assert signature == gh_sign(payload.encode(), secret)  # GitHub's documented algorithm
        assert verify({"x-hub-signature-256": signature}, payload.encode(), secret) == Verified(
            None
        )
        with pytest.raises(SignatureError, match="no matching"):
            verify({"x-hub-signature-256": signature}, (payload + " ").encode(), secret)
        with pytest.raises(SignatureError, match="no matching"):
            verify({"x-hub-signature-256": signature}, payload.encode(), secret + "!")
        checks += [
            {"op": "github_verify", "secret": secret, "payload": payload, "signature": signature},
            {
                "op": "github_verify",
                "secret": secret,
                "payload": payload + " ",
                "signature": signature,
            },
            {
                "op": "github_verify",
                "secret": secret + "!",
                "payload": payload,
                "signature": signature,
            },
        ]
    verdicts = [answer["valid"] for answer in vendor_oracle.ask(checks)]
    assert verdicts == [True, False, False] * len(cases)


def test_valid_signature_accepted_with_delivery_id() -> None:
    h = {"x-hub-signature-256": gh_sign(), "x-github-delivery": DELIVERY}
    assert verify(h).delivery_id == DELIVERY


def test_uppercase_hex_accepted_and_delivery_id_optional() -> None:
    sig = gh_sign()
    assert verify({"x-hub-signature-256": "sha256=" + sig[7:].upper()}).delivery_id is None


def test_no_timestamp_check() -> None:
    h = {"x-hub-signature-256": gh_sign()}
    key = SCHEME.prepare_key(SECRET)
    assert SCHEME.verify(key, h, BODY, 0.0).delivery_id is None
    assert SCHEME.verify(key, h, BODY, 9e12).delivery_id is None


def test_tampered_body_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"x-hub-signature-256": gh_sign()}, body=BODY + b" ")


def test_wrong_secret_rejected() -> None:
    with pytest.raises(SignatureError, match="no matching"):
        verify({"x-hub-signature-256": gh_sign(secret="nope")})


def test_legacy_sha1_header_alone_is_not_enough() -> None:
    sha1 = "sha1=" + hmac.new(SECRET.encode(), BODY, hashlib.sha1).hexdigest()
    with pytest.raises(SignatureError, match="missing"):
        verify({"x-hub-signature": sha1})


@pytest.mark.parametrize(
    "sig",
    [
        "",
        "garbage",
        "sha256=",
        "sha256=xyz",
        "sha1=" + "0" * 64,
        "sha256=" + "0" * 63,
        "sha256=" + "g" * 64,
        "sha256=" + "\u00e9" * 64,
        "SHA256=" + "0" * 64,
        "sha256=" + "0" * 64 + ",sha256=" + "0" * 64,
        "sha256= " + "0" * 63,
    ],
)
def test_malformed_header_rejected(sig: str) -> None:
    with pytest.raises(SignatureError):
        verify({"x-hub-signature-256": sig})


def test_missing_header_rejected() -> None:
    with pytest.raises(SignatureError, match="missing"):
        verify({"x-github-delivery": DELIVERY})


def test_unusable_secret_is_value_error() -> None:
    with pytest.raises(ValueError):
        SCHEME.prepare_key("")


@given(body=st.binary(max_size=500), secret=st.text(min_size=1, max_size=100))
def test_property_valid_verifies_and_tampering_fails(body: bytes, secret: str) -> None:
    h = {"x-hub-signature-256": gh_sign(body, secret)}
    assert verify(h, body=body, secret=secret).delivery_id is None
    with pytest.raises(SignatureError):
        verify(h, body=body + b"\x00", secret=secret)
