"""The console's pages of the agent platform: runs (and, beside them, what the platform adds to
a delivery's path). Mounted inside the delivery console (gateway/console/), whose session,
forms and templates they share; this package sits above both products, so the delivery
console itself stays clear of the platform (docs/console.md, docs/architecture.md)."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from gateway.agent_console import run_pages


def routes() -> list[BaseRoute]:
    return [
        Route("/runs", run_pages.runs),
        Route("/runs/{run_id}", run_pages.run),
        Route("/runs/{run_id}/live", run_pages.run_live),
        Route("/runs/{run_id}/cancel", run_pages.cancel_run, methods=["POST"]),
    ]


__all__ = ["routes"]
