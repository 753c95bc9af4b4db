"""REST handlers under /api/v1, one module per resource; each module exposes `routes`."""

from __future__ import annotations

from importlib import import_module

from starlette.routing import BaseRoute

RESOURCE_MODULES = (
    "factories",
    "webhooks",
    "deliveries",
    "automations",
    "runs",
    "factory_runs",
    "tasks",
    "conversations",
    "meta",
    "openapi",
)


def routes() -> list[BaseRoute]:
    collected: list[BaseRoute] = []
    for name in RESOURCE_MODULES:
        collected += import_module(f"gateway.api.{name}").routes
    return collected


__all__ = ["RESOURCE_MODULES", "routes"]
