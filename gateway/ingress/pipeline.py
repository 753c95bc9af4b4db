"""The accept pipeline, in the check order docs/ingress.md gives:
404 -> 413 -> failed-auth budget 429 -> 401 -> rate 429 -> 400 -> 202 (duplicate: the first id).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from gateway import ids
from gateway.backends.contract import IngressBackend, Label, Outcome, Submission, Verdict
from gateway.errors import (
    BacklogFull,
    InvalidJson,
    NotFound,
    RateLimited,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from gateway.ingress import slack_bodies
from gateway.ingress.auth import authenticate
from gateway.ingress.body import MAX_BODY, BodyReader, TooLarge, declared_length
from gateway.ingress.cache import ConfigCache
from gateway.ingress.delivery_identity import delivery_identity
from gateway.ingress.source import source_address
from gateway.ingress.webhook_config import WebhookConfig
from gateway.settings import Settings
from gateway.types import Receive

# a full backlog drains at the evaluator's pace (thousands per second): a short wait suffices
BACKLOG_RETRY_AFTER_S = 2


class Ingress:
    def __init__(self, settings: Settings, cache: ConfigCache, backend: IngressBackend) -> None:
        self.settings = settings
        self.cache = cache
        self.backend = backend
        self.bodies = BodyReader(settings.body_timeout)

    async def accept(
        self,
        webhook_uid: str,
        path_token: str | None,
        headers: Mapping[str, str],
        peer: str | None,
        receive: Receive,
    ) -> str:
        """The delivery id to answer 202 with; any refusal is raised as a ServiceError."""
        config = self.cache.live(webhook_uid) or await self.cache.get(webhook_uid)
        if config is None or (path_token is not None and config.auth_mode != "url_token"):
            raise NotFound("webhook: unknown, disabled or deleted")
        body = await self._body(config, headers, receive)
        proxies = self.settings.trusted_proxies
        source = (
            source_address(peer, headers.get("x-forwarded-for"), proxies)
            if proxies
            else peer or "unknown"
        )
        outcome = await self._decide(config, headers, path_token, body, source)
        if outcome.verdict is Verdict.STALE:
            # another process changed this webhook: take its config from SQL, decide again
            fresh = await self.cache.reload(config.uid)
            if fresh is None:
                raise NotFound("webhook: unknown, disabled or deleted")
            outcome = await self._decide(fresh, headers, path_token, body, source)
        return _answer(outcome)

    async def _body(
        self, config: WebhookConfig, headers: Mapping[str, str], receive: Receive
    ) -> bytes:
        declared = declared_length(headers.get("content-length"))
        try:
            if declared is not None and declared > MAX_BODY:
                raise TooLarge(declared)
            return await self.bodies.read(receive)
        except TooLarge as exc:
            await self.backend.log_rejection(
                config.target, ids.new_id("dlv"), exc.size, Label.TOO_LARGE
            )
            raise

    async def _decide(
        self,
        config: WebhookConfig,
        headers: Mapping[str, str],
        path_token: str | None,
        body: bytes,
        source: str,
    ) -> Outcome:
        ok, provider_id = authenticate(config, headers, body, path_token)
        if not ok:
            return await self.backend.auth_failed(
                config.target, source, ids.new_id("dlv"), len(body)
            )
        if config.slack:  # its handshake, and its form-encoded bodies stored as JSON
            body = slack_bodies.as_json(headers, body)
        try:  # only now, after authentication, is the body parsed
            orjson.loads(body)
            valid_json = True
        except orjson.JSONDecodeError:
            valid_json = False
        identity = delivery_identity(config.delivery_id_header, headers, provider_id, body)
        return await self.backend.submit(
            Submission(config.target, ids.new_id("dlv"), identity, body, valid_json, source)
        )


def _answer(outcome: Outcome) -> str:
    verdict, delivery_id, _ = outcome
    if delivery_id is not None and (verdict is _ACCEPTED or verdict is _DUPLICATE):
        return delivery_id
    raise _refusal(outcome)


_ACCEPTED, _DUPLICATE = Verdict.ACCEPTED, Verdict.DUPLICATE


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
    if verdict is Verdict.BACKLOG_FULL:
        return BacklogFull(
            "too many accepted deliveries wait for evaluation; nothing was recorded, retry later",
            retry_after=BACKLOG_RETRY_AFTER_S,
        )
    # the script refused before any write: certainly not recorded, and the change is in SQL
    # already, so the next attempt decides with the new config
    return Unavailable("webhook configuration is changing; nothing was recorded", retry_after=1)
