"""REST handlers under /api/v1, one module per resource; each module exposes `routes`."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

from starlette.routing import BaseRoute

from gateway.api.openapi import API_PREFIX, document, openapi_routes
from gateway.openapi import Documented

RESOURCE_MODULES = (
    "factories",
    "webhooks",
    "deliveries",
    "delivery_replays",
    "filter_tests",
    "automations",
    "runs",
    "factory_runs",
    "tasks",
    "inbox",
    "schedules",
    "handoff",
    "conversations",
    "conversation_reads",
    "attachments",
    "runner_protocol",
    "run_outputs",
    "agents",
    "environments",
    "llm_models",
    "scorers",
    "scoring",
    "benchmarks",
    "factory_files",
    "factory_metrics",
    "factory_insights",
    "meta",
)


def routes(documented_elsewhere: Sequence[Documented] = ()) -> list[BaseRoute]:
    """Every API route, /openapi.json included (documenting also `documented_elsewhere`)."""
    collected: list[BaseRoute] = []
    for name in RESOURCE_MODULES:
        collected += import_module(f"gateway.api.{name}").routes
    return [*collected, *openapi_routes(collected, documented_elsewhere)]


def openapi_document(documented_elsewhere: Sequence[Documented] = ()) -> dict[str, Any]:
    return document(routes(documented_elsewhere), documented_elsewhere)


__all__ = ["API_PREFIX", "RESOURCE_MODULES", "openapi_document", "routes"]
