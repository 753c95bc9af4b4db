"""REST handlers under /api/v1, one module per resource."""

from __future__ import annotations

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    from gateway.api import factories

    return [*factories.routes]
