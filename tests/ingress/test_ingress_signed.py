"""Signature mode end to end: deliveries signed by the providers' own libraries (standardwebhooks,
stripe, slack_sdk; GitHub, PagerDuty, Sentry and Vercel with hmac, as they document it) are
accepted; tampered, unsigned, expired and future-dated ones get 401; the provider's delivery id
de-duplicates, or the body digest where the provider sends none."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier
from standardwebhooks.webhooks import Webhook
from stripe import WebhookSignature

from tests.ingress.hooks import REQUEST_HANDLING, Hook, add_webhook
from tests.support import GatewayClient, World

pytestmark = REQUEST_HANDLING

SW_SECRET = "whsec_" + base64.b64encode(b"standard-webhooks-test-key-32byt").decode()
BODY = '{"type":"invoice.paid","data":{"id":"in_1"}}'


def _post(gw: GatewayClient, hook: Hook, body: str, headers: dict[str, str]) -> httpx.Response:
    return gw.post(hook.path, content=body.encode(), headers=headers)


def _sw_headers(msg_id: str, body: str, when: datetime, prefix: str = "webhook") -> dict[str, str]:
    signature = Webhook(SW_SECRET).sign(msg_id, when, body)
    return {
        f"{prefix}-id": msg_id,
        f"{prefix}-timestamp": str(int(when.timestamp())),
        f"{prefix}-signature": signature,
    }


def test_standard_webhooks(gw: GatewayClient, gw_world: World) -> None:
    hook = add_webhook(gw, gw_world, "signature", scheme="standard_webhooks", secret=SW_SECRET)
    now = datetime.now(UTC)
    first = _post(gw, hook, BODY, _sw_headers("msg_1", BODY, now))
    assert first.status_code == 202, first.text
    # the provider's webhook-id is the identity: a redelivery answers the first delivery id
    redelivery = _post(gw, hook, BODY, _sw_headers("msg_1", BODY, now + timedelta(seconds=5)))
    assert redelivery.status_code == 202 and redelivery.json() == first.json()
    other = _post(gw, hook, BODY, _sw_headers("msg_2", BODY, now))
    assert other.status_code == 202 and other.json() != first.json()
    # svix-* header names are the same scheme
    svix = _post(gw, hook, BODY, _sw_headers("msg_3", BODY, now, prefix="svix"))
    assert svix.status_code == 202, svix.text

    signed = _sw_headers("msg_4", BODY, now)
    assert _post(gw, hook, BODY.replace("in_1", "in_2"), signed).status_code == 401
    assert _post(gw, hook, BODY, {"webhook-id": "msg_4"}).status_code == 401
    for skew in (-301, 400):
        stale = _sw_headers("msg_5", BODY, now + timedelta(seconds=skew))
        assert _post(gw, hook, BODY, stale).status_code == 401, skew


def test_stripe(gw: GatewayClient, gw_world: World) -> None:
    secret = "whsec_stripe_test_secret"
    hook = add_webhook(gw, gw_world, "signature", scheme="stripe", secret=secret)
    header = WebhookSignature.generate_signature_header(BODY, secret)
    ok = _post(gw, hook, BODY, {"Stripe-Signature": header})
    assert ok.status_code == 202, ok.text
    assert _post(gw, hook, BODY + " ", {"Stripe-Signature": header}).status_code == 401
    assert _post(gw, hook, BODY, {}).status_code == 401
    for skew in (-301, 400):
        old = WebhookSignature.generate_signature_header(BODY, secret, int(time.time()) + skew)
        assert _post(gw, hook, BODY, {"Stripe-Signature": old}).status_code == 401, skew


def _slack_headers(secret: str, body: str, when: int) -> dict[str, str]:
    signature = SignatureVerifier(secret).generate_signature(timestamp=str(when), body=body)
    assert signature is not None
    return {"X-Slack-Signature": signature, "X-Slack-Request-Timestamp": str(when)}


def test_slack(gw: GatewayClient, gw_world: World) -> None:
    secret = "8f742231b10e8888abcd99yyyzzz85a5"
    hook = add_webhook(gw, gw_world, "signature", scheme="slack", secret=secret)
    now = int(time.time())
    assert _post(gw, hook, BODY, _slack_headers(secret, BODY, now)).status_code == 202
    tampered = _slack_headers(secret, BODY, now)
    assert _post(gw, hook, BODY.replace("1", "2"), tampered).status_code == 401
    for skew in (-301, 400):
        assert _post(gw, hook, BODY, _slack_headers(secret, BODY, now + skew)).status_code == 401


def _github_headers(secret: str, body: str, delivery: str) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={digest}", "X-GitHub-Delivery": delivery}


def test_github_delivery_header_deduplicates(gw: GatewayClient, gw_world: World) -> None:
    secret = "github-webhook-secret"
    hook = add_webhook(gw, gw_world, "signature", scheme="github", secret=secret)
    first = _post(gw, hook, BODY, _github_headers(secret, BODY, "72d3162e-cc78-11e3-81ab"))
    assert first.status_code == 202, first.text
    # a different body under the same X-GitHub-Delivery is the same delivery
    again_body = BODY.replace("in_1", "in_9")
    again = _post(
        gw, hook, again_body, _github_headers(secret, again_body, "72d3162e-cc78-11e3-81ab")
    )
    assert again.status_code == 202 and again.json() == first.json()
    fresh = _post(gw, hook, BODY, _github_headers(secret, BODY, "72d3162e-cc78-11e3-81ac"))
    assert fresh.json() != first.json()
    wrong = _github_headers("not-the-secret", BODY, "x")
    assert _post(gw, hook, BODY, wrong).status_code == 401


def test_a_row_still_holding_the_hyphenated_name_verifies(
    gw: GatewayClient, gw_world: World
) -> None:
    # written by a process older than the rename (revision 0014): loaded under the alias
    hook = add_webhook(gw, gw_world, "signature", scheme="standard-webhooks", secret=SW_SECRET)
    accepted = _post(gw, hook, BODY, _sw_headers("msg_old", BODY, datetime.now(UTC)))
    assert accepted.status_code == 202, accepted.text
    assert _post(gw, hook, BODY, {}).status_code == 401


def _pagerduty_headers(secret: str, body: str, webhook_id: str) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    return {"X-PagerDuty-Signature": f"v1={digest}", "X-Webhook-Id": webhook_id}


def test_pagerduty(gw: GatewayClient, gw_world: World) -> None:
    secret = "pagerduty-subscription-secret"
    hook = add_webhook(gw, gw_world, "signature", scheme="pagerduty", secret=secret)
    first = _post(gw, hook, BODY, _pagerduty_headers(secret, BODY, "wh-1"))
    assert first.status_code == 202, first.text
    # X-Webhook-Id is the identity: PagerDuty's retry of wh-1 is the same delivery
    retry = _post(gw, hook, BODY, _pagerduty_headers(secret, BODY, "wh-1"))
    assert retry.status_code == 202 and retry.json() == first.json()
    other = _post(gw, hook, BODY, _pagerduty_headers(secret, BODY, "wh-2"))
    assert other.status_code == 202 and other.json() != first.json()
    # while a secret rotates PagerDuty signs with both: either matching is enough
    rotating = _pagerduty_headers("old-secret", BODY, "wh-3")
    rotating["X-PagerDuty-Signature"] += (
        "," + _pagerduty_headers(secret, BODY, "")["X-PagerDuty-Signature"]
    )
    assert _post(gw, hook, BODY, rotating).status_code == 202
    tampered = _pagerduty_headers(secret, BODY, "wh-4")
    assert _post(gw, hook, BODY.replace("in_1", "in_2"), tampered).status_code == 401
    assert _post(gw, hook, BODY, _pagerduty_headers("wrong", BODY, "wh-5")).status_code == 401
    assert _post(gw, hook, BODY, {"X-Webhook-Id": "wh-6"}).status_code == 401


def test_sentry(gw: GatewayClient, gw_world: World) -> None:
    secret = "sentry-integration-client-secret"

    def sentry_headers(body: str, key: str = secret) -> dict[str, str]:
        digest = hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()
        return {
            "Sentry-Hook-Signature": digest,
            "Sentry-Hook-Resource": "issue",
            "Sentry-Hook-Timestamp": "1",  # unsigned: not checked
            "Request-ID": str(uuid.uuid4()),  # new on every send: not the identity
        }

    hook = add_webhook(gw, gw_world, "signature", scheme="sentry", secret=secret)
    first = _post(gw, hook, BODY, sentry_headers(BODY))
    assert first.status_code == 202, first.text
    resent = _post(gw, hook, BODY, sentry_headers(BODY))  # same event, new Request-ID
    assert resent.status_code == 202 and resent.json() == first.json()
    changed = BODY.replace("in_1", "in_2")
    other = _post(gw, hook, changed, sentry_headers(changed))
    assert other.status_code == 202 and other.json() != first.json()
    assert _post(gw, hook, changed, sentry_headers(BODY)).status_code == 401
    assert _post(gw, hook, BODY, sentry_headers(BODY, "wrong")).status_code == 401
    assert _post(gw, hook, BODY, {"Sentry-Hook-Resource": "issue"}).status_code == 401


def test_vercel(gw: GatewayClient, gw_world: World) -> None:
    secret = "vercel-webhook-secret"

    def vercel_headers(body: str, key: str = secret) -> dict[str, str]:
        return {"X-Vercel-Signature": hmac.new(key.encode(), body.encode(), "sha1").hexdigest()}

    hook = add_webhook(gw, gw_world, "signature", scheme="vercel", secret=secret)
    first = _post(gw, hook, BODY, vercel_headers(BODY))
    assert first.status_code == 202, first.text
    resent = _post(gw, hook, BODY, vercel_headers(BODY))
    assert resent.status_code == 202 and resent.json() == first.json()
    changed = BODY.replace("in_1", "in_2")
    assert _post(gw, hook, changed, vercel_headers(changed)).json() != first.json()
    assert _post(gw, hook, changed, vercel_headers(BODY)).status_code == 401
    sha256 = hmac.new(secret.encode(), BODY.encode(), hashlib.sha256).hexdigest()
    assert _post(gw, hook, BODY, {"X-Vercel-Signature": sha256}).status_code == 401
    assert _post(gw, hook, BODY, {}).status_code == 401


@pytest.mark.parametrize(
    "scheme", ["standard_webhooks", "stripe", "github", "slack", "pagerduty", "sentry", "vercel"]
)
def test_unsigned_is_401_and_counts_toward_the_failed_auth_budget(
    gw: GatewayClient, gw_world: World, scheme: str
) -> None:
    secret = SW_SECRET if scheme == "standard_webhooks" else "some-secret"
    hook = add_webhook(gw, gw_world, "signature", scheme=scheme, secret=secret)
    statuses = [_post(gw, hook, BODY, {}).status_code for _ in range(11)]
    assert statuses == [401] * 10 + [429]
