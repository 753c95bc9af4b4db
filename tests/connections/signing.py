"""Provider deliveries as each provider signs and sends them: the headers of the real thing,
over the exact bytes sent. Slack is signed by slack_sdk's own SignatureVerifier; GitHub's
signature is checked against @octokit/webhooks-methods by the end-to-end tests (through the
node oracle of tests/signatures)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from slack_sdk.signature import SignatureVerifier


@dataclass(frozen=True)
class Signed:
    body: bytes
    headers: dict[str, str]


def _hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def github(
    secret: str, event: str, payload: Any, delivery: str | None = None, signature: str = ""
) -> Signed:
    """`signature`: one made elsewhere (the octokit oracle) for these bytes."""
    body = encode(payload)
    return Signed(
        body,
        {
            "content-type": "application/json",
            "user-agent": "GitHub-Hookshot/a1b2c3d",
            "x-github-event": event,
            "x-github-delivery": delivery or str(uuid.uuid4()),
            "x-github-hook-id": "123456",
            "x-hub-signature-256": signature or "sha256=" + _hex(secret, body),
        },
    )


GITLAB_EVENTS = {
    "merge_request": "Merge Request Hook",
    "note": "Note Hook",
    "issue": "Issue Hook",
}


def gitlab(secret: str, payload: Any, delivery: str | None = None) -> Signed:
    return Signed(
        encode(payload),
        {
            "content-type": "application/json",
            "user-agent": "GitLab/17.5.0",
            "x-gitlab-event": GITLAB_EVENTS.get(payload.get("object_kind"), "System Hook"),
            "x-gitlab-token": secret,
            "x-gitlab-event-uuid": str(uuid.uuid4()),
            "idempotency-key": delivery or str(uuid.uuid4()),
        },
    )


def slack(
    secret: str,
    payload: Any,
    *,
    retry: int | None = None,
    at: int | None = None,
    body: bytes | None = None,
    content_type: str = "application/json",
) -> Signed:
    """Signed by slack_sdk; `retry`: Slack's X-Slack-Retry-Num of a resend."""
    raw = encode(payload) if body is None else body
    stamp = str(at if at is not None else int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=raw)
    assert signature is not None
    headers = {
        "content-type": content_type,
        "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": signature,
    }
    if retry is not None:
        headers |= {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"}
    return Signed(raw, headers)


def linear(
    secret: str, payload: Any, delivery: str | None = None, stamp_ms: int | None = None
) -> Signed:
    """With `webhookTimestamp` set to now (or `stamp_ms`), as Linear sends it."""
    stamped = dict(payload) | {"webhookTimestamp": stamp_ms or int(time.time() * 1000)}
    body = encode(stamped)
    return Signed(
        body,
        {
            "content-type": "application/json; charset=utf-8",
            "user-agent": "Linear-Webhook",
            "linear-event": str(payload.get("type", "")),
            "linear-delivery": delivery or str(uuid.uuid4()),
            "linear-signature": _hex(secret, body),
        },
    )


def jira(secret: str, payload: Any, delivery: str | None = None) -> Signed:
    body = encode(payload)
    return Signed(
        body,
        {
            "content-type": "application/json",
            "user-agent": "Atlassian Webhook HTTP Client",
            "x-atlassian-webhook-identifier": delivery or str(uuid.uuid4().int)[:16],
            "x-atlassian-webhook-retry": "0",
            "x-hub-signature": "sha256=" + _hex(secret, body),
        },
    )
