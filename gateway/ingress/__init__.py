"""The hot path: POST /webhooks/w/{webhook_uid}[/{token}]."""

from gateway.ingress.endpoint import INGRESS_PREFIX, IngressEndpoint

__all__ = ["INGRESS_PREFIX", "IngressEndpoint"]
