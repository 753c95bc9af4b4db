"""The delivery log's row: how a DeliveryRecord is stored (written by the embedded backend before
its 202, and by the evaluator for deliveries that reached it through a Redis stream)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.foundation.store import tables as t
from gateway.foundation.store.bulk import BulkInsert

PENDING, EVALUATED = "pending", "evaluated"

DELIVERIES = BulkInsert(
    t.deliveries,
    (
        *("delivery_id", "webhook_uid", "received_at", "size", "label", "identity"),
        *("duplicate_of", "payload", "evaluation", "evaluated_at", "reason", "headers"),
    ),
)


def delivery_row(
    record: DeliveryRecord, evaluation: str | None, evaluated_at: datetime | None = None
) -> dict[str, Any]:
    """The log row of `record`; `evaluation` (pending, evaluated) and the time it was evaluated
    apply to accepted ones."""
    accepted = record.label is Label.ACCEPTED
    return {
        "delivery_id": record.delivery_id,
        "webhook_uid": record.webhook_uid,
        "received_at": record.received_at,
        "size": record.size,
        "label": record.label.value,
        "identity": record.identity,
        "duplicate_of": record.duplicate_of,
        "payload": record.payload if accepted else None,
        "evaluation": evaluation if accepted else None,
        "evaluated_at": evaluated_at if accepted else None,
        "reason": None if record.reason is None else record.reason.value,
        "headers": record.headers if accepted else None,
    }


def headers_of(block: bytes) -> dict[str, str]:
    """A record's stored request headers (an HTTP/1.1 header block, gateway/webhook_gateway/ingress/
    stored_headers.py) as a JSON-ready object."""
    parsed = {}
    for line in block.split(b"\r\n"):
        name, _, value = line.partition(b": ")
        if name:
            parsed[name.decode("latin-1")] = value.decode("latin-1")
    return parsed
