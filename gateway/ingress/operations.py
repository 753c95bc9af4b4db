"""The ingress endpoint's two path shapes, described for the OpenAPI document (the dispatcher
sends them to a raw ASGI endpoint, past the API's router)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from gateway.ingress.body import MAX_BODY
from gateway.ingress.endpoint import INGRESS_PREFIX
from gateway.openapi import Documented, Operation


class IngressAccepted(Struct):
    delivery_id: str


def _operation(summary: str) -> Operation:
    return Operation(
        summary,
        "ingress",
        ok=202,
        response=IngressAccepted,
        body=Annotated[Any, Meta(description=f"any JSON value, at most {MAX_BODY:,} bytes")],
        errors=(400, 401, 404, 408, 413, 429, 503),
        public=True,
        notes="Authenticated by the webhook's own mode, not by an API key. A duplicate "
        "delivery is a 202 with the first delivery's `delivery_id`. Slack's url_verification "
        'handshake (signature scheme `slack`) is answered 200 `{"challenge": ...}` and '
        "recorded as nothing; Slack's form-encoded bodies are stored as JSON (docs/providers.md).",
        problems=((400, "`invalid_json`: the body is not JSON"),),
    )


PATH = INGRESS_PREFIX + "{webhook_uid}"
OPERATIONS: tuple[Documented, ...] = (
    ("POST", PATH, _operation("Deliver an event (token or signature mode)")),
    ("POST", PATH + "/{token}", _operation("Deliver an event (url_token mode)")),
)
