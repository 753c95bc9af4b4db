"""Vercel: ``x-vercel-signature: <hex HMAC-SHA1(body)>``, key = the webhook's secret (or, for an
integration's webhooks, the integration's client secret) as UTF-8.

No timestamp is signed and no delivery id header is sent: the event id is in the body, so a
resend of the same event is caught by the body digest.
"""

from __future__ import annotations

from gateway.webhook_gateway.signatures.body_hmac import BodyHmac

SCHEME = BodyHmac("vercel", "x-vercel-signature", algorithm="sha1")
