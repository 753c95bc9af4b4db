"""Headers that may not name a webhook's delivery identity: the identity is stored in the
delivery log in plain text and is what de-duplication keys on, so a header carrying a credential
or a signature would store the secret and make every delivery after the first a Duplicate.
Domain (webhook validation) and ingress (config load) both ask."""

from __future__ import annotations

from gateway.webhook_gateway.signatures import PROVIDER_VERIFIERS, SCHEMES

# Headers that carry a credential
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
# Name parts that mark a credential or a signature in headers no scheme here reads (tokens in
# headers, as url_token-style senders use: X-Gitlab-Token, X-Webhook-Secret, X-Api-Key, ...).
CREDENTIAL_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "signature", "hmac", "apikey", "credential", "auth"}
)


def identity_header_refusal(name: str) -> str | None:
    """Why header `name` may not be a webhook's delivery id header, or None when it may."""
    lower = name.lower()
    if lower in CREDENTIAL_HEADERS:
        return "carries credentials"
    for scheme in (*SCHEMES.values(), *PROVIDER_VERIFIERS.values()):
        if lower in scheme.signature_headers:
            return f"carries the {scheme.name} signature or its timestamp"
    words = set(lower.split("-"))
    if words & CREDENTIAL_WORDS or {"api", "key"} <= words:
        return "looks like a credential or signature header"
    return None
