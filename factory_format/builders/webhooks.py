"""webhooks/<name>.yaml -> Webhook, the scheme name made canonical."""

from __future__ import annotations

from ..documents import Document
from ..model import Webhook
from .context import BuildContext

__all__ = ["SCHEME_ALIASES", "build_webhook"]

SCHEME_ALIASES = {"standard-webhooks": "standard_webhooks"}


def build_webhook(doc: Document, ctx: BuildContext) -> Webhook | None:
    if not doc.clean():
        return None
    raw = doc.value
    ctx.defer("secret", raw["secretName"], doc, ("secretName",))
    if raw.get("deliveryIdHeader"):
        ctx.defer("delivery_id_header", raw["deliveryIdHeader"], doc, ("deliveryIdHeader",))
    scheme = raw.get("signatureScheme")
    return Webhook(
        name=doc.name,
        path=doc.path,
        auth_mode=raw.get("authMode", "token"),
        signature_scheme=SCHEME_ALIASES.get(scheme, scheme) if scheme else None,
        secret_name=raw["secretName"],
        delivery_id_header=raw.get("deliveryIdHeader"),
        enabled=raw.get("enabled", True),
    )
