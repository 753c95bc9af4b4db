"""The accept pipeline, in the check order docs/ingress.md gives:
404 -> 413 -> failed-auth budget 429 -> 401 -> rate 429 -> 400 -> 202 (duplicate: the first id).
The failed-auth budget refuses failed authentications only: a delivery that authenticates goes on
to the rate limit whatever the budget of its source address says.

Every outcome is counted (gateway/foundation/metrics) and every rejection logged with its reason
code (gateway/webhook_gateway/ingress/rejection_log.py); the response to the sender never names the
reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from gateway.foundation.backends.contract import IngressBackend, Label, Outcome, Submission, Verdict
from gateway.foundation.metrics.counts import COUNTS
from gateway.http.trusted_proxies import TrustedProxies
from gateway.kernel import ids
from gateway.kernel.errors import (
    BacklogFull,
    InvalidJson,
    NotFound,
    RateLimited,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from gateway.kernel.rejections import Reason
from gateway.kernel.settings import Settings
from gateway.kernel.types import Receive
from gateway.webhook_gateway.ingress import slack_bodies
from gateway.webhook_gateway.ingress.auth import authenticate
from gateway.webhook_gateway.ingress.body import MAX_BODY, BodyReader, TooLarge, declared_length
from gateway.webhook_gateway.ingress.cache import ConfigCache
from gateway.webhook_gateway.ingress.delivery_identity import delivery_identity
from gateway.webhook_gateway.ingress.rejection_log import RejectionLog
from gateway.webhook_gateway.ingress.stored_headers import stored_headers
from gateway.webhook_gateway.ingress.webhook_config import NOT_PARSED, WebhookConfig

# a full backlog drains at the evaluator's pace (thousands per second): a short wait suffices
BACKLOG_RETRY_AFTER_S = 2
_COUNTED = COUNTS.deliveries  # outcome -> count (gateway/foundation/metrics)


class Ingress:
    def __init__(
        self,
        settings: Settings,
        cache: ConfigCache,
        backend: IngressBackend,
        proxies: TrustedProxies,
    ) -> None:
        self.settings = settings
        self.proxies = proxies
        self.cache = cache
        self.backend = backend
        self.bodies = BodyReader(settings.body_timeout)
        self.rejections = RejectionLog()

    async def accept(
        self,
        webhook_uid: str,
        path_token: str | None,
        headers: Mapping[str, str],
        peer: str | None,
        receive: Receive,
        provider_path: bool = False,
    ) -> str:
        """The delivery id to answer 202 with; any refusal is raised as a ServiceError.
        `provider_path`: addressed at /webhooks/p/ (a provider connection), else /webhooks/w/
        (a custom webhook); a uid of the other kind is unknown there."""
        config = self.cache.live(webhook_uid) or await self.cache.get(webhook_uid)
        if (
            config is None
            or (path_token is not None and config.auth_mode != "url_token")
            or (config.provider is not None) is not provider_path
        ):
            _COUNTED["not_found"] += 1
            raise NotFound("webhook: unknown, disabled or deleted")
        body = await self._body(config, headers, receive)
        source = self.proxies.client(peer, headers.get("x-forwarded-for"))
        outcome, delivery_id, reason = await self._decide(config, headers, path_token, body, source)
        if outcome.verdict is Verdict.STALE:
            # another process changed this webhook: take its config from SQL, decide again
            fresh = await self.cache.reload(config.uid)
            if fresh is None:
                _COUNTED["not_found"] += 1
                raise NotFound("webhook: unknown, disabled or deleted")
            outcome, delivery_id, reason = await self._decide(
                fresh, headers, path_token, body, source
            )
        verdict = outcome.verdict
        if verdict is _ACCEPTED:
            _COUNTED["accepted"] += 1
        elif verdict is _DUPLICATE:
            _COUNTED["duplicate"] += 1
        elif verdict is Verdict.STALE:  # changing again: answered 503, nothing recorded
            _COUNTED["unavailable"] += 1
        else:
            reason = _REASONS.get(verdict, reason)
            if reason is not None:
                _COUNTED[reason.value] += 1
                self.rejections.rejected(config.uid, delivery_id, reason)
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
            delivery_id = ids.new_id("dlv")
            _COUNTED[Reason.TOO_LARGE.value] += 1
            self.rejections.rejected(config.uid, delivery_id, Reason.TOO_LARGE)
            await self.backend.log_rejection(
                config.target, delivery_id, exc.size, Label.TOO_LARGE, Reason.TOO_LARGE
            )
            raise

    async def _decide(
        self,
        config: WebhookConfig,
        headers: Mapping[str, str],
        path_token: str | None,
        body: bytes,
        source: str,
    ) -> tuple[Outcome, str, Reason | None]:
        """(the backend's outcome, the delivery id it was given, why authentication failed).
        Only a failed authentication meets the failed-auth budget of `source`."""
        delivery_id = ids.new_id("dlv")
        failure, provider_id, payload = authenticate(config, headers, body, path_token)
        if failure is not None:
            outcome = await self.backend.auth_failed(
                config.target, source, delivery_id, len(body), failure
            )
            return outcome, delivery_id, failure
        if config.slack:  # its handshake, and its form-encoded bodies stored as JSON
            body = slack_bodies.as_json(headers, body)
        valid_json = True
        if payload is NOT_PARSED:  # only now, after authentication, is the body parsed
            try:
                payload = orjson.loads(body)
            except orjson.JSONDecodeError:
                valid_json = False
        if config.body_identity is not None and valid_json:  # a provider's id in the body
            provider_id = config.body_identity(headers, payload) or provider_id
        identity = delivery_identity(config.delivery_id_header, headers, provider_id, body)
        stored = stored_headers(headers, path_token) if valid_json else b""  # kept if accepted
        submission = Submission(config.target, delivery_id, identity, body, valid_json, stored)
        return await self.backend.submit(submission), delivery_id, None


def _answer(outcome: Outcome) -> str:
    verdict, delivery_id, _ = outcome
    if delivery_id is not None and (verdict is _ACCEPTED or verdict is _DUPLICATE):
        return delivery_id
    raise _refusal(outcome)


_ACCEPTED, _DUPLICATE = Verdict.ACCEPTED, Verdict.DUPLICATE
# the reason of each refusal the backend decides (AUTH_REJECTED keeps authentication's own)
_REASONS = {
    Verdict.AUTH_LIMITED: Reason.AUTH_RATE_LIMITED,
    Verdict.RATE_LIMITED: Reason.RATE_LIMITED,
    Verdict.INVALID_JSON: Reason.INVALID_JSON,
    Verdict.BACKLOG_FULL: Reason.BACKLOG_FULL,
}


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
