"""Jira Cloud (admin webhooks saved with a secret): ``x-hub-signature: sha256=<hex
HMAC-SHA256(body)>``, the WebSub ``method=signature`` form, key = the secret as UTF-8.

No timestamp is signed. The delivery id is ``x-atlassian-webhook-identifier``, which Atlassian
keeps across retries of a delivery.
"""

from __future__ import annotations

from gateway.webhook_gateway.signatures.body_hmac import BodyHmac

SCHEME = BodyHmac(
    "jira", "x-hub-signature", prefix="sha256=", delivery="x-atlassian-webhook-identifier"
)
