"""The console's pages of the agent platform: runs, work items and a factory's activity.
Mounted inside the delivery console (gateway/webhook_gateway/console/), whose session, forms and
templates they share; this package sits above both products, so the delivery console itself stays
clear of the platform (docs/console.md, docs/architecture.md)."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from gateway.platform.agent_console import activity_pages, run_pages, work_item_pages


def routes() -> list[BaseRoute]:
    return [
        Route("/runs", run_pages.runs),
        Route("/runs/{run_id}", run_pages.run),
        Route("/runs/{run_id}/live", run_pages.run_live),
        Route("/runs/{run_id}/cancel", run_pages.cancel_run, methods=["POST"]),
        Route("/f/{uid}/activity", activity_pages.factory_activity),
        Route("/f/{uid}/work-items", work_item_pages.board),
        Route("/f/{uid}/work-items/{item_id}", work_item_pages.work_item),
    ]


__all__ = ["routes"]
