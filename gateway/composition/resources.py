"""Every resource of /api/v1: the route modules of both products, in the document's order."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

from starlette.routing import BaseRoute

from gateway.foundation.api.openapi import document, openapi_routes
from gateway.foundation.openapi import Documented

RESOURCE_MODULES = (
    "gateway.platform.factories.routes",
    "gateway.webhook_gateway.webhooks.routes",
    "gateway.webhook_gateway.deliveries.routes",
    "gateway.webhook_gateway.deliveries.replay_routes",
    "gateway.webhook_gateway.deliveries.filter_test_routes",
    "gateway.webhook_gateway.automations.routes",
    "gateway.webhook_gateway.connections.routes",
    "gateway.webhook_gateway.deliveries.connection_routes",
    "gateway.webhook_gateway.deliveries.stream_routes",
    "gateway.webhook_gateway.deliveries.channel_routes",
    "gateway.foundation.subscriptions.routes",
    "gateway.foundation.subscriptions.message_routes",
    "gateway.foundation.subscriptions.stream_routes",
    "gateway.platform.runs.routes",
    "gateway.platform.runs.skills.routes",
    "gateway.platform.factories.dispatch_routes",
    "gateway.platform.tasks.routes",
    "gateway.platform.work_items.routes",
    "gateway.platform.inbox.routes",
    "gateway.platform.schedules.routes",
    "gateway.platform.runs.handoff.routes",
    "gateway.platform.runs.conversations.routes",
    "gateway.platform.runs.conversations.read_routes",
    "gateway.platform.runs.attachments.routes",
    "gateway.platform.runners.routes",
    "gateway.platform.runs.outputs.routes",
    "gateway.platform.runners.read_routes",
    "gateway.platform.agents.routes",
    "gateway.platform.catalog.environment_routes",
    "gateway.platform.catalog.model_routes",
    "gateway.platform.scoring.scorer_routes",
    "gateway.platform.scoring.result_routes",
    "gateway.platform.benchmark_suites.routes",
    "gateway.platform.factory_files.routes",
    "gateway.platform.factory_files.plan_routes",
    "gateway.platform.factory_files.validate_routes",
    "gateway.platform.analytics.metrics_routes",
    "gateway.platform.analytics.insight_routes",
    "gateway.platform.catalog.networking_routes",
)


def routes(documented_elsewhere: Sequence[Documented] = ()) -> list[BaseRoute]:
    """Every API route, /openapi.json included (documenting also `documented_elsewhere`)."""
    collected: list[BaseRoute] = []
    for name in RESOURCE_MODULES:
        collected += import_module(name).routes
    return [*collected, *openapi_routes(collected, documented_elsewhere)]


def openapi_document(documented_elsewhere: Sequence[Documented] = ()) -> dict[str, Any]:
    return document(routes(documented_elsewhere), documented_elsewhere)


__all__ = ["RESOURCE_MODULES", "openapi_document", "routes"]
