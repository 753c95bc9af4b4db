"""What the gateway's evaluator may use of the platform when deliveries start runs: the one
narrow interface between the two products (tests/test_layers.py holds every other gateway
module to no platform import). The runs themselves are rows the evaluator writes in bulk
(gateway/evaluator/webhook_runs.py); around them the platform wants to hear of two things."""

from __future__ import annotations

from gateway.platform.analytics.pull_requests import FORGE_MARK, forge_detail, record_forge_detail
from gateway.platform.inbox.notifications import on_dispatch_failed

__all__ = ["FORGE_MARK", "forge_detail", "on_dispatch_failed", "record_forge_detail"]
