"""The ingress ASGI endpoint: POST /webhooks/w/{webhook_uid}[/{token}].

A raw ASGI callable (no Starlette Request): headers become one dict, the pipeline decides, and
errors render as problem+json. The path's token segment never reaches a log line.
"""

from __future__ import annotations

import logging

from gateway.errors import MethodNotAllowed, NotFound, ServiceError, Unavailable
from gateway.ingress.body import ClientGone
from gateway.ingress.pipeline import Ingress, IngressRequest
from gateway.problem import PROBLEM_CONTENT_TYPE, render
from gateway.services import Services
from gateway.types import Receive, Scope, Send

INGRESS_PREFIX = "/webhooks/w/"
log = logging.getLogger("gateway.ingress")

_JSON = b"application/json"


class IngressEndpoint:
    def __init__(self, services: list[Services]) -> None:
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            delivery_id = await self._accept(scope, receive)
        except ClientGone:
            return
        except ServiceError as error:
            status, body, headers = render(error)
            await _send(send, status, PROBLEM_CONTENT_TYPE, body, headers)
            return
        except Exception:
            log.exception("ingress: unexpected error on webhook %s", _uid_of(scope))
            status, body, headers = render(ServiceError("an internal error occurred"))
            await _send(send, status, PROBLEM_CONTENT_TYPE, body, headers)
            return
        await _send(send, 202, _JSON, b'{"delivery_id":"%s"}' % delivery_id.encode(), {})

    async def _accept(self, scope: Scope, receive: Receive) -> str:
        if scope["method"] != "POST":
            raise MethodNotAllowed(f"{scope['method']}: webhook ingress accepts POST only")
        ingress = self._ingress()
        parts = scope["path"][len(INGRESS_PREFIX) :].split("/")
        if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
            raise NotFound("webhook: unknown, disabled or deleted")
        client = scope.get("client")
        request = IngressRequest(
            webhook_uid=parts[0],
            path_token=parts[1] if len(parts) == 2 else None,
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            peer=client[0] if client else None,
            receive=receive,
        )
        return await ingress.accept(request)

    def _ingress(self) -> Ingress:
        if not self._services or self._services[0].ingress is None:
            raise Unavailable("ingress is starting or stopping")
        ingress: Ingress = self._services[0].ingress
        return ingress


def _uid_of(scope: Scope) -> str:
    path: str = scope.get("path", "")
    return path[len(INGRESS_PREFIX) :].split("/", 1)[0]


async def _send(
    send: Send, status: int, content_type: bytes, body: bytes, extra: dict[str, str]
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
