"""What the gateway's evaluator may use of the platform when deliveries start runs: the one
narrow interface between the two products (the import contracts of pyproject.toml hold every
other gateway module to no platform import). The evaluator plans the runs of a batch of
deliveries (gateway/evaluator/webhook_runs.py) as rows in the column order of `DELIVERY_RUNS`,
encoded for the driver, and the platform writes them (`insert_delivery_runs`: the platform's
one writer of runs, runs/creation/new_runs.py); around them the platform wants to hear of two
things, and it says what a run's payload attachment is listed as."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from gateway.platform.analytics.pull_requests import FORGE_MARK, forge_detail, record_forge_detail
from gateway.platform.inbox.notifications import on_dispatch_failed
from gateway.platform.runs.creation.new_runs import DELIVERY_RUNS, insert_delivery_runs
from gateway.platform.runs.record.models import file_artifact


def payload_artifact(attachment_id: str, created: datetime, name: str, size: int) -> Any:
    """The `artifacts` entry of a webhook run's payload attachment, as its JSON column holds it:
    a FILE like those the run produces, so GET /agent/artifacts/{attachment_id} finds it."""
    return msgspec.to_builtins(
        file_artifact(attachment_id, created, name, "application/json", size)
    )


__all__ = [
    "DELIVERY_RUNS",
    "FORGE_MARK",
    "forge_detail",
    "insert_delivery_runs",
    "on_dispatch_failed",
    "payload_artifact",
    "record_forge_detail",
]
