"""The ingress ASGI endpoint: POST /webhooks/w/{webhook_uid}[/{token}]."""

from __future__ import annotations

from gateway.problem import PROBLEM_CONTENT_TYPE, problem_body
from gateway.services import Services
from gateway.types import Receive, Scope, Send

INGRESS_PREFIX = "/webhooks/w/"


class IngressEndpoint:
    def __init__(self, services: list[Services]) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = problem_body(404, "not_found", "Not found", "webhook: unknown, disabled or deleted")
        headers = [
            (b"content-type", PROBLEM_CONTENT_TYPE),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": body})
