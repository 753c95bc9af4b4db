"""The hot path: POST /webhooks/w/{webhook_uid}[/{token}]."""

from gateway.webhook_gateway.ingress.endpoint import INGRESS_PREFIX, IngressEndpoint

__all__ = ["INGRESS_PREFIX", "IngressEndpoint"]
