"""The ingress ASGI endpoint: POST /webhooks/w/{webhook_uid}[/{token}] (custom webhooks) and
POST /webhooks/p/{connection_uid} (provider connections).

A raw ASGI callable (no Starlette Request): headers stay raw until looked up, the pipeline
decides, and errors render as problem+json. The path's token segment never reaches a log line.
"""

from __future__ import annotations

import logging
from time import perf_counter

from gateway.foundation.metrics.counts import COUNTS
from gateway.kernel.errors import MethodNotAllowed, NotFound, ServiceError, Unavailable
from gateway.kernel.problem import PROBLEM_CONTENT_TYPE, render
from gateway.kernel.types import Receive, Scope, Send
from gateway.webhook_gateway.ingress.body import ClientGone
from gateway.webhook_gateway.ingress.headers import RawHeaders
from gateway.webhook_gateway.ingress.pipeline import Ingress
from gateway.webhook_gateway.ingress.slack_bodies import Challenge

INGRESS_PREFIX = "/webhooks/w/"
PROVIDER_PREFIX = "/webhooks/p/"
PREFIXES = (INGRESS_PREFIX, PROVIDER_PREFIX)  # both the same length
STARTING_RETRY_S = 5
# counted as the status of a request whose client left before its body arrived (no answer sent)
CLIENT_GONE = 499
_answered = COUNTS.response  # (status, seconds): gateway/foundation/metrics
log = logging.getLogger("gateway.ingress")

_JSON = b"application/json"
_PREFIX_LEN = len(INGRESS_PREFIX)
# 202 response headers by body length (ids have a fixed size): a tuple, so no server can alter
# the shared value
_ACCEPTED_HEAD: dict[int, tuple[tuple[bytes, bytes], ...]] = {}


class IngressEndpoint:
    """Finds the process's Ingress in the lifespan state (`scope["state"]["ingress"]`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = perf_counter()
        try:
            delivery_id = await self._accept(scope, receive)
        except ClientGone:
            _answered(CLIENT_GONE, perf_counter() - started)
            return
        except Challenge as challenge:  # Slack's url_verification: 200 with its challenge
            await _send(send, 200, _JSON, challenge.body, {})
            _answered(200, perf_counter() - started)
            return
        except ServiceError as error:
            status, body, headers = render(error)
            await _send(send, status, PROBLEM_CONTENT_TYPE, body, headers)
            _answered(status, perf_counter() - started)
            return
        except Exception:
            log.exception("ingress: unexpected error on webhook %s", _uid_of(scope))
            status, body, headers = render(ServiceError("an internal error occurred"))
            await _send(send, status, PROBLEM_CONTENT_TYPE, body, headers)
            _answered(status, perf_counter() - started)
            return
        body = b'{"delivery_id":"%s"}' % delivery_id.encode()
        head = _ACCEPTED_HEAD.get(len(body))
        if head is None:
            head = ((b"content-type", _JSON), (b"content-length", b"%d" % len(body)))
            if len(_ACCEPTED_HEAD) < 64:
                _ACCEPTED_HEAD[len(body)] = head
        await send({"type": "http.response.start", "status": 202, "headers": head})
        await send({"type": "http.response.body", "body": body})
        _answered(202, perf_counter() - started)

    async def _accept(self, scope: Scope, receive: Receive) -> str:
        if scope["method"] != "POST":
            raise MethodNotAllowed(f"{scope['method']}: webhook ingress accepts POST only")
        state = scope.get("state")
        ingress: Ingress | None = state.get("ingress") if state else None
        if ingress is None:
            # refused before anything was written; a restart takes seconds, not one
            detail = "ingress is starting or stopping; nothing was recorded"
            raise Unavailable(detail, retry_after=STARTING_RETRY_S)
        path: str = scope["path"]
        uid, sep, token = path[_PREFIX_LEN:].partition("/")
        provider_path = path.startswith(PROVIDER_PREFIX)
        if not uid or "/" in token or (sep and not token) or (sep and provider_path):
            raise NotFound("webhook: unknown, disabled or deleted")
        client = scope.get("client")
        return await ingress.accept(
            uid,
            token if sep else None,
            RawHeaders(scope["headers"]),
            client[0] if client else None,
            receive,
            provider_path,
        )


def _uid_of(scope: Scope) -> str:
    path: str = scope.get("path", "")
    return path[_PREFIX_LEN:].split("/", 1)[0]


async def _send(
    send: Send, status: int, content_type: bytes, body: bytes, extra: dict[str, str]
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
