"""Sentry (integration platform webhooks): ``sentry-hook-signature: <hex HMAC-SHA256(body)>``,
key = the integration's client secret as UTF-8.

Sentry signs the body alone (``SentryApp.build_signature(body)`` in Sentry's source): its
``sentry-hook-timestamp`` header is not signed, so checking it would stop no replay, and it is
not checked. No delivery id header: Sentry's ``request-id`` is a fresh UUID on every send, so a
resend of the same event is caught by the body digest instead. The timestamp header is listed
with the signature so that neither can be a webhook's delivery id header (a per-second value
would make two events of the same second one delivery).
"""

from __future__ import annotations

from gateway.webhook_gateway.signatures.body_hmac import BodyHmac

SCHEME = BodyHmac("sentry", "sentry-hook-signature", unsigned=("sentry-hook-timestamp",))
