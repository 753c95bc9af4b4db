"""Ingress backends: rate limits, de-duplication and the durable delivery log."""

from gateway.foundation.backends.contract import (
    DeliveryRecord,
    IngressBackend,
    Label,
    Outcome,
    Submission,
    Target,
    Verdict,
)

__all__ = [
    "DeliveryRecord",
    "IngressBackend",
    "Label",
    "Outcome",
    "Submission",
    "Target",
    "Verdict",
]
