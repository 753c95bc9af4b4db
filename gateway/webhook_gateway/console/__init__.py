"""The delivery console at /console: server-rendered HTML over the domain's delivery log,
replay and filter backtest (docs/console.md)."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gateway.webhook_gateway.console import connection_pages, event_stream, pages
from gateway.webhook_gateway.console.session import PATH

STATIC = Path(__file__).parent / "static"
HOOK = "/f/{uid}/w/{webhook_uid}"
CONNECTION = "/p/{connection_uid}"


def routes(extra: list[BaseRoute] | None = None) -> list[BaseRoute]:
    """The console's routes, with `extra` pages of other packages under the same path (they
    share its session and assets)."""
    return [
        Mount(
            PATH,
            routes=[
                Route("/", pages.home),
                Route("/login", pages.login_form, methods=["GET"]),
                Route("/login", pages.login, methods=["POST"]),
                Route("/logout", pages.logout, methods=["POST"]),
                Route("/events/stream", event_stream.stream),
                Route("/f/{uid}", pages.factory),
                Route(HOOK, pages.webhook),
                Route(HOOK + "/rows", pages.webhook_rows),
                Route(HOOK + "/filter-test", pages.filter_test, methods=["POST"]),
                Route(HOOK + "/d/{delivery_id}", pages.delivery),
                Route(HOOK + "/d/{delivery_id}/live", pages.delivery_live),
                Route(HOOK + "/d/{delivery_id}/replay", pages.replay, methods=["POST"]),
                Route(CONNECTION, connection_pages.connection),
                Route(CONNECTION + "/rows", connection_pages.connection_rows),
                Route(CONNECTION + "/filter-test", connection_pages.filter_test, methods=["POST"]),
                Route(CONNECTION + "/d/{delivery_id}", connection_pages.delivery),
                Route(CONNECTION + "/d/{delivery_id}/live", connection_pages.delivery_live),
                Route(
                    CONNECTION + "/d/{delivery_id}/replay",
                    connection_pages.replay,
                    methods=["POST"],
                ),
                *(extra or []),
                Mount("/static", app=StaticFiles(directory=STATIC), name="console-static"),
            ],
        )
    ]


__all__ = ["routes"]
