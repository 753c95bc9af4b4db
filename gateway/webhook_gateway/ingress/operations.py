"""The ingress endpoint's two path shapes, described for the OpenAPI document (the dispatcher
sends them to a raw ASGI endpoint, past the API's router)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from gateway.foundation.openapi import Documented, Operation
from gateway.webhook_gateway.ingress.body import MAX_BODY
from gateway.webhook_gateway.ingress.endpoint import INGRESS_PREFIX, PROVIDER_PREFIX


class IngressAccepted(Struct):
    delivery_id: str


def _operation(summary: str, notes: str) -> Operation:
    return Operation(
        summary,
        "ingress",
        ok=202,
        response=IngressAccepted,
        body=Annotated[Any, Meta(description=f"any JSON value, at most {MAX_BODY:,} bytes")],
        errors=(400, 401, 404, 408, 413, 429, 503),
        public=True,
        notes=notes,
        problems=((400, "`invalid_json`: the body is not JSON"),),
    )


_SLACK = (
    'Slack\'s url_verification handshake is answered 200 `{"challenge": ...}` and recorded '
    "as nothing; Slack's form-encoded bodies are stored as JSON (docs/providers.md)."
)
_WEBHOOK = _operation(
    "Deliver an event (token or signature mode)",
    "Authenticated by the webhook's own mode, not by an API key. A duplicate delivery is a 202 "
    "with the first delivery's `delivery_id`. Signature scheme `slack`: " + _SLACK,
)


PATH = INGRESS_PREFIX + "{webhook_uid}"
PROVIDER_PATH = PROVIDER_PREFIX + "{connection_uid}"
OPERATIONS: tuple[Documented, ...] = (
    ("POST", PATH, _WEBHOOK),
    ("POST", PATH + "/{token}", _operation("Deliver an event (url_token mode)", _WEBHOOK.notes)),
    (
        "POST",
        PROVIDER_PATH,
        _operation(
            "Deliver a provider's native webhook (a provider connection)",
            "Verified with the provider's own scheme (docs/providers.md), de-duplicated on its "
            "delivery id (Slack: the body's `event_id`, so Slack's retries are duplicates). "
            + _SLACK,
        ),
    ),
)
