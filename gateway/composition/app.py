"""create_app(settings): the ASGI app. Knows nothing of uvicorn; the CLI owns the server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypedDict

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount

from gateway.composition import resources, wiring
from gateway.foundation.api import API_PREFIX, health, metrics
from gateway.foundation.services import IngressHandle, Services
from gateway.http.request_head import HeadLimits, head_error, refuse_head
from gateway.kernel.errors import MethodNotAllowed, NotFound, ServiceError
from gateway.kernel.problem import PROBLEM_CONTENT_TYPE, problem_body, render
from gateway.kernel.settings import Settings
from gateway.kernel.types import ASGIApp, Receive, Scope, Send
from gateway.platform import agent_console
from gateway.webhook_gateway import console
from gateway.webhook_gateway.ingress.endpoint import PREFIXES as INGRESS_PREFIXES
from gateway.webhook_gateway.ingress.endpoint import IngressEndpoint
from gateway.webhook_gateway.ingress.operations import OPERATIONS as INGRESS_OPERATIONS

log = logging.getLogger("gateway")
# operations served outside the /api/v1 router, documented with it
ELSEWHERE = (*INGRESS_OPERATIONS, *health.OPERATIONS, *metrics.OPERATIONS)


class State(TypedDict):
    """The lifespan state: each request's `scope["state"]` (Starlette's `request.state`)."""

    services: Services
    ingress: IngressHandle | None  # None when this process does not serve ingress


def create_app(settings: Settings) -> ASGIApp:
    """The API under /api/v1 and the ingress under /webhooks/w/ and /webhooks/p/, as the role
    setting allows."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[State]:
        services, _consumer = await wiring.start(settings)
        try:
            yield {"services": services, "ingress": services.ingress}
        finally:
            await services.close()

    routes = resources.routes(ELSEWHERE)
    mounted = (
        [Mount(API_PREFIX, routes=routes), *console.routes(agent_console.routes())]
        if settings.serves_api
        else []
    )
    app = Starlette(
        routes=[*health.routes, *metrics.routes, *mounted],
        exception_handlers={
            ServiceError: _service_error,
            HTTPException: _http_error,
            Exception: _crash,
        },
        lifespan=lifespan,
    )
    if not settings.serves_ingress:
        return HeadLimits(app)
    return IngressDispatcher(app, IngressEndpoint())


def openapi_document() -> dict[str, Any]:
    """The document GET /api/v1/openapi.json serves: the API's routes, the ingress and the
    health endpoints."""
    return resources.openapi_document(ELSEWHERE)


class IngressDispatcher:
    """Sends /webhooks/w/... and /webhooks/p/... straight to the ingress endpoint, past the
    router and middleware;
    a request head over the limits (ingress/request_head.py) goes to neither. The server's
    lifespan messages reach the API app, whose lifespan fills `scope["state"]`."""

    def __init__(self, api: ASGIApp, ingress: ASGIApp) -> None:
        self.api = api
        self.ingress = ingress

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            error = head_error(scope)
            if error is not None:
                await refuse_head(send, error)
            elif scope["path"].startswith(INGRESS_PREFIXES):
                await self.ingress(scope, receive, send)
            else:
                await self.api(scope, receive, send)
        else:
            await self.api(scope, receive, send)


def _problem(error: ServiceError) -> Response:
    status, body, headers = render(error)
    return Response(
        body, status_code=status, headers=headers, media_type=PROBLEM_CONTENT_TYPE.decode()
    )


async def _service_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return _problem(exc)


async def _http_error(_request: Request, exc: Exception) -> Response:
    """The router's 404 and 405, as the problems of the same status everywhere else (one
    title each: Starlette's own titles are capitalised differently)."""
    assert isinstance(exc, HTTPException)
    known = {404: NotFound, 405: MethodNotAllowed}.get(exc.status_code)
    code = known.code if known is not None else "http_error"
    title = known.title if known is not None else str(exc.detail)
    detail = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
    body = problem_body(exc.status_code, code, title, detail)
    return Response(
        body,
        status_code=exc.status_code,
        headers=exc.headers,
        media_type=PROBLEM_CONTENT_TYPE.decode(),
    )


async def _crash(request: Request, exc: Exception) -> Response:
    """A 500 closes its connection and says so (`Connection: close`): Starlette re-raises the
    error once this answer is out, and uvicorn then closes the connection; without the header a
    keep-alive client sent its next request into the closed socket and had it reset."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    answer = _problem(ServiceError("an internal error occurred; it has been logged"))
    answer.headers["connection"] = "close"
    return answer


def app_from_environment() -> ASGIApp:
    """For `uvicorn --factory gateway.composition.app:app_from_environment`: run by each HTTP
    worker process, which also takes the protocol's deadlines from the settings here."""
    from gateway.http.http_server import configure_protocol
    from gateway.kernel.settings import load_settings

    settings = load_settings()
    configure_protocol(settings)
    return create_app(settings)


__all__ = ["State", "app_from_environment", "create_app", "openapi_document"]
