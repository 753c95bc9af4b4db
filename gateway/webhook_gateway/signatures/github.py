"""GitHub: ``x-hub-signature-256: sha256=<hex HMAC-SHA256(body)>``, key = the secret as UTF-8.

GitHub signs no timestamp, so there is no freshness check (replays are caught by delivery-id
de-duplication). The delivery id is ``x-github-delivery`` when present; GitHub keeps it on a
redelivery. The legacy SHA-1 ``x-hub-signature`` is not accepted.
"""

from __future__ import annotations

from gateway.webhook_gateway.signatures.body_hmac import BodyHmac

SCHEME = BodyHmac("github", "x-hub-signature-256", prefix="sha256=", delivery="x-github-delivery")
