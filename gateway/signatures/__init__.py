"""Webhook signature verification for ingress ``signature`` mode, one pure module per scheme.

Adding a provider: write a module with a class implementing :class:`SignatureScheme` and a
module-level ``SCHEME`` instance, then add one line to ``SCHEMES`` below.
"""

from __future__ import annotations

from gateway.signatures import github, linear, shopify, slack, standard_webhooks, stripe
from gateway.signatures.base import (
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
        stripe.SCHEME,
        github.SCHEME,
        slack.SCHEME,
        shopify.SCHEME,
        linear.SCHEME,
    )
}


def get_scheme(name: str) -> SignatureScheme:
    """The scheme registered under ``name``; ``KeyError`` for an unknown one."""
    try:
        return SCHEMES[name]
    except KeyError:
        raise KeyError(f"unknown signature scheme {name!r}") from None


__all__ = [
    "MAX_SIGNATURES",
    "SCHEMES",
    "TOLERANCE_SECONDS",
    "Headers",
    "SignatureError",
    "SignatureScheme",
    "Verified",
    "get_scheme",
]
