"""The accept pipeline, in the contract's check order (CONTRACT 6):
404 -> 413 -> failed-auth budget 429 -> 401 -> rate 429 -> 400 -> 202 (duplicate: the first id).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import orjson

from gateway import ids
from gateway.backends.base import IngressBackend, Label, Outcome, Submission, Verdict
from gateway.errors import (
    InvalidJson,
    NotFound,
    RateLimited,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from gateway.ingress.auth import authenticate
from gateway.ingress.body import MAX_BODY, TooLarge, declared_length, read_body
from gateway.ingress.cache import ConfigCache
from gateway.ingress.config import WebhookConfig
from gateway.ingress.identity import delivery_identity
from gateway.ingress.source import source_address
from gateway.settings import Settings
from gateway.types import Receive

log = logging.getLogger("gateway.ingress")


@dataclass(frozen=True, slots=True)
class IngressRequest:
    webhook_uid: str
    path_token: str | None
    headers: dict[str, str]
    peer: str | None
    receive: Receive


class Ingress:
    def __init__(self, settings: Settings, cache: ConfigCache, backend: IngressBackend) -> None:
        self.settings = settings
        self.cache = cache
        self.backend = backend

    async def accept(self, request: IngressRequest) -> str:
        """The delivery id to answer 202 with; any refusal is raised as a ServiceError."""
        config = await self.cache.get(request.webhook_uid)
        if config is None or (request.path_token is not None and config.auth_mode != "url_token"):
            raise NotFound("webhook: unknown, disabled or deleted")
        body = await self._body(config, request)
        source = source_address(
            request.peer, request.headers.get("x-forwarded-for"), self.settings.trusted_proxies
        )
        outcome = await self._decide(config, request, body, source)
        if outcome.verdict is Verdict.STALE:
            # another process changed this webhook: take its config from SQL, decide again
            fresh = await self.cache.reload(config.uid)
            if fresh is None:
                raise NotFound("webhook: unknown, disabled or deleted")
            outcome = await self._decide(fresh, request, body, source)
        return _answer(config.uid, outcome)

    async def _body(self, config: WebhookConfig, request: IngressRequest) -> bytes:
        declared = declared_length(request.headers.get("content-length"))
        try:
            if declared is not None and declared > MAX_BODY:
                raise TooLarge(declared)
            return await read_body(request.receive, self.settings.body_timeout)
        except TooLarge as exc:
            await self.backend.log_rejection(
                config.target, ids.new_id("dlv"), exc.size, Label.TOO_LARGE
            )
            raise

    async def _decide(
        self, config: WebhookConfig, request: IngressRequest, body: bytes, source: str
    ) -> Outcome:
        ok, provider_id = authenticate(config, request.headers, body, request.path_token)
        if not ok:
            return await self.backend.auth_failed(
                config.target, source, ids.new_id("dlv"), len(body)
            )
        try:  # only now, after authentication, is the body parsed
            orjson.loads(body)
            valid_json = True
        except orjson.JSONDecodeError:
            valid_json = False
        identity = delivery_identity(config.delivery_id_header, request.headers, provider_id, body)
        return await self.backend.submit(
            Submission(config.target, ids.new_id("dlv"), identity, body, valid_json, source)
        )


def _answer(uid: str, outcome: Outcome) -> str:
    verdict = outcome.verdict
    if verdict is Verdict.ACCEPTED or verdict is Verdict.DUPLICATE:
        assert outcome.delivery_id is not None
        if verdict is Verdict.DUPLICATE:
            log.debug("webhook %s: Duplicate of %s", uid, outcome.delivery_id)
        return outcome.delivery_id
    raise _refusal(outcome)


def _refusal(outcome: Outcome) -> ServiceError:
    verdict = outcome.verdict
    if verdict is Verdict.AUTH_REJECTED:
        return Unauthenticated("webhook authentication failed")
    if verdict is Verdict.AUTH_LIMITED:
        return RateLimited(
            "too many failed authentications from this address", retry_after=outcome.retry_after_s
        )
    if verdict is Verdict.RATE_LIMITED:
        return RateLimited(
            "more than 60 deliveries in the last 60 seconds", retry_after=outcome.retry_after_s
        )
    if verdict is Verdict.INVALID_JSON:
        return InvalidJson("body: not valid JSON")
    return Unavailable("webhook configuration is changing; retry shortly")
