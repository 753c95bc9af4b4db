"""Routes of this resource (to be filled in)."""

from starlette.routing import BaseRoute

routes: list[BaseRoute] = []
