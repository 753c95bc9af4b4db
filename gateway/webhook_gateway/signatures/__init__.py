"""Webhook signature verification, one pure module per scheme: for custom webhooks in ``signature``
mode (``SCHEMES``, by the names factory files use) and for provider connections
(``PROVIDER_VERIFIERS``, by provider).

Adding a scheme: write a module with an object implementing :class:`SignatureScheme` (a class of
its own, or a ``BodyHmac`` when the provider signs only the body) as ``SCHEME``, then add one line
to ``SCHEMES`` below.
"""

from __future__ import annotations

from gateway.webhook_gateway.signatures import (
    github,
    gitlab,
    jira,
    linear,
    pagerduty,
    sentry,
    shopify,
    slack,
    standard_webhooks,
    stripe,
    vercel,
)
from gateway.webhook_gateway.signatures.base import (
    MAX_SIGNATURES,
    TOLERANCE_SECONDS,
    Headers,
    SignatureError,
    SignatureScheme,
    Verified,
)

SCHEMES: dict[str, SignatureScheme] = {
    s.name: s
    for s in (
        standard_webhooks.SCHEME,
        github.SCHEME,
        stripe.SCHEME,
        pagerduty.SCHEME,
        sentry.SCHEME,
        vercel.SCHEME,
        slack.SCHEME,
        shopify.SCHEME,
        linear.SCHEME,
    )
}
# Older spellings still accepted on input; stored and returned under the scheme's own name.
SCHEME_ALIASES = {"standard-webhooks": standard_webhooks.SCHEME.name}
# How a provider connection's deliveries authenticate, by provider.
PROVIDER_VERIFIERS: dict[str, SignatureScheme] = {
    "github": github.SCHEME,
    "gitlab": gitlab.SCHEME,
    "slack": slack.SCHEME,
    "linear": linear.FRESH,
    "jira": jira.SCHEME,
}


def scheme_name(name: str) -> str:
    """The registered name of scheme `name` or of its alias; ``KeyError`` for an unknown one."""
    canonical = SCHEME_ALIASES.get(name, name)
    if canonical not in SCHEMES:
        raise KeyError(f"unknown signature scheme {name!r}")
    return canonical


def get_scheme(name: str) -> SignatureScheme:
    """The scheme registered under ``name`` (or an alias of it); ``KeyError`` for an unknown one."""
    return SCHEMES[scheme_name(name)]


__all__ = [
    "MAX_SIGNATURES",
    "PROVIDER_VERIFIERS",
    "SCHEMES",
    "SCHEME_ALIASES",
    "TOLERANCE_SECONDS",
    "Headers",
    "SignatureError",
    "SignatureScheme",
    "Verified",
    "get_scheme",
    "scheme_name",
]
