"""Replay stored deliveries: one (POST .../deliveries/{id}/replay), a time range
(POST .../deliveries/replay), and the replays of a webhook with their progress
(GET .../webhooks/{webhook_uid}/replays)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.http import json_response
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.foundation.openapi import Header
from gateway.kernel.errors import InvalidRequest, Unavailable
from gateway.webhook_gateway.deliveries import replay_bulk as bulk
from gateway.webhook_gateway.deliveries.log import require_webhook
from gateway.webhook_gateway.deliveries.models import (
    MAX_BULK,
    BulkAnswer,
    BulkReplay,
    ReplayAnswer,
    ReplayList,
    ReplayQuery,
)
from gateway.webhook_gateway.deliveries.replay import (
    MAX_KEY_CHARS,
    Replayer,
    Source,
    webhook_source,
)
from gateway.webhook_gateway.deliveries.replay_list import list_replays

routes = Routes("deliveries")
HOOK = "/factory/{uid}/webhooks/{webhook_uid}"
KEY_NOTE = (
    "An `Idempotency-Key` header (at most 200 characters) makes a retry answer with the "
    "first request's replay instead of sending the delivery again."
)
IDEMPOTENCY_KEY = Header(
    "Idempotency-Key",
    "a retry with the same key sends nothing again: it answers with what the first request "
    "replayed",
    MAX_KEY_CHARS,
)


def key_of(request: Request) -> str | None:
    """The request's Idempotency-Key (400 past MAX_KEY_CHARS)."""
    key = request.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= MAX_KEY_CHARS:
        raise InvalidRequest(f"Idempotency-Key: 1 to {MAX_KEY_CHARS} characters")
    return key


def replayer_of(request: Request) -> Replayer:
    """The process's replayer (503 when it serves no ingress backend)."""
    services = services_of(request)
    if services.delivery_backend is None:
        raise Unavailable("replay: this process serves no ingress backend")
    return Replayer(services.database, services.delivery_backend, services.pending_deliveries)


async def _replayer(request: Request) -> tuple[Replayer, str]:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, request.path_params["uid"])
    return replayer_of(request), principal.uid


def _source(request: Request) -> Source:
    return webhook_source(request.path_params["uid"], request.path_params["webhook_uid"])


@routes.post(
    HOOK + "/deliveries/{delivery_id}/replay",
    "Replay one stored delivery as a new one",
    ok=201,
    response=ReplayAnswer,
    body_required=False,
    headers=(IDEMPOTENCY_KEY,),
    errors=(400, 401, 403, 404, 409, 429, 503),
    notes="The copy is evaluated against today's automations like a live delivery. "
    + KEY_NOTE
    + " A repeated request answers 200.",
    problems=(
        (409, "`webhook_disabled`, `not_replayable` (not accepted), `idempotency_key_reused`"),
        (429, "the webhook took 60 deliveries in the last 60 seconds"),
    ),
)
async def replay_one(request: Request) -> ReplayAnswer | Response:
    replayer, requested_by = await _replayer(request)
    done = await replayer.replay(
        _source(request), request.path_params["delivery_id"], key_of(request), requested_by
    )
    answer = ReplayAnswer(done.delivery_id, done.replay_of)
    return answer if done.created else json_response(answer, 200)


@routes.post(
    HOOK + "/deliveries/replay",
    "Replay the accepted deliveries of a time range",
    response=BulkAnswer,
    headers=(IDEMPOTENCY_KEY,),
    errors=(400, 401, 403, 404, 409, 413, 503),
    notes=f"Oldest first, at most {MAX_BULK} per request. Each replay takes a slot of the "
    "webhook's delivery rate; the first refusal stops the request and the rest are `not_sent`. "
    + KEY_NOTE,
    problems=((409, "`webhook_disabled`"),),
)
async def replay_range(request: Request, body: Body[BulkReplay]) -> BulkAnswer:
    replayer, requested_by = await _replayer(request)
    wanted = await body.read()
    return await bulk.replay_range(
        replayer, _source(request), wanted, key_of(request), requested_by
    )


@routes.get(
    HOOK + "/replays",
    "Replays of a webhook's deliveries, newest first, with their progress",
    response=ReplayList,
)
async def replays(request: Request, query: Query[ReplayQuery]) -> ReplayList:
    principal = await principal_of(request)
    services = services_of(request)
    limit = query.read().limit
    async with services.database.read() as conn:
        factory_uid, webhook_uid = request.path_params["uid"], request.path_params["webhook_uid"]
        await get_accessible_factory(conn, principal, factory_uid)
        await require_webhook(conn, factory_uid, webhook_uid)
        items = await list_replays(conn, webhook_uid, limit)
    return ReplayList(items)
