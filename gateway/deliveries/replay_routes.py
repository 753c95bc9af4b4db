"""Replay stored deliveries: one (POST .../deliveries/{id}/replay), a time range
(POST .../deliveries/replay), and the replays of a webhook with their progress
(GET .../webhooks/{webhook_uid}/replays)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import principal_of, services_of
from gateway.api.fields import Moment, Timestamp
from gateway.api.http import json_response
from gateway.api.routing import Body, Query, Routes
from gateway.deliveries import replay_bulk as bulk
from gateway.deliveries.replay import MAX_KEY_CHARS, Replayer
from gateway.deliveries.replay_list import list_replays
from gateway.errors import InvalidRequest, Unavailable
from gateway.openapi import Header

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
Outcome = Literal["matched", "no_match", "no_automations", "webhook_not_live", "no_foreman"]


class ReplayAnswer(Struct):
    delivery_id: Annotated[str, Meta(description="the new delivery")]
    replay_of: Annotated[str, Meta(description="the delivery it replays")]


class BulkReplay(Struct, kw_only=True, forbid_unknown_fields=True):
    since: Moment
    until: Moment | None = None
    label: Annotated[
        Literal["Accepted"], Meta(description="only accepted deliveries have a payload")
    ] = "Accepted"
    outcome: Annotated[
        Outcome | None, Meta(description="only deliveries whose trace has this outcome")
    ] = None
    limit: Annotated[int, Meta(ge=1, le=bulk.MAX_BULK)] = 50

    def __post_init__(self) -> None:
        if self.until is not None and self.until <= self.since:
            raise ValueError("until: must be after since")


class BulkItem(Struct):
    delivery_id: str
    status: Annotated[
        str,
        Meta(
            description="replayed, replayed_before (same Idempotency-Key), not_sent (rate "
            "limit reached: retry after retry_after seconds) or refused: <code>"
        ),
    ]
    replay_delivery_id: str | None


class BulkAnswer(Struct):
    items: list[BulkItem]
    counts: dict[str, int]
    retry_after: Annotated[
        int | None, Meta(description="seconds until the webhook's rate limit frees a slot")
    ]


class ReplayQuery(Struct, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100)] = 50


class ReplayItem(Struct, kw_only=True):
    delivery_id: str
    replay_of: str
    created_at: Timestamp
    label: Annotated[str | None, Meta(description="null while on its way to the log")]
    evaluation: Literal["pending", "evaluated", "failed"] | None
    outcome: Outcome | None
    runs: int


class ReplayList(Struct):
    replays: list[ReplayItem]


def _key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= MAX_KEY_CHARS:
        raise InvalidRequest(f"Idempotency-Key: 1 to {MAX_KEY_CHARS} characters")
    return key


async def _replayer(request: Request) -> tuple[Replayer, str]:
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, request.path_params["uid"])
    if services.delivery_backend is None:
        raise Unavailable("replay: this process serves no ingress backend")
    replayer = Replayer(services.database, services.delivery_backend, services.pending_deliveries)
    return replayer, principal.uid


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
async def replay_one(request: Request) -> Response:
    replayer, requested_by = await _replayer(request)
    done = await replayer.replay(
        request.path_params["uid"],
        request.path_params["webhook_uid"],
        request.path_params["delivery_id"],
        _key(request),
        requested_by,
    )
    answer = {"delivery_id": done.delivery_id, "replay_of": done.replay_of}
    return json_response(answer, 201 if done.created else 200)


@routes.post(
    HOOK + "/deliveries/replay",
    "Replay the accepted deliveries of a time range",
    response=BulkAnswer,
    headers=(IDEMPOTENCY_KEY,),
    errors=(400, 401, 403, 404, 409, 413, 503),
    notes=f"Oldest first, at most {bulk.MAX_BULK} per request. Each replay takes a slot of the "
    "webhook's delivery rate; the first refusal stops the request and the rest are `not_sent`. "
    + KEY_NOTE,
    problems=((409, "`webhook_disabled`"),),
)
async def replay_range(request: Request, body: Body[BulkReplay]) -> Response:
    replayer, requested_by = await _replayer(request)
    wanted = await body.read()
    result = await bulk.replay_range(
        replayer,
        request.path_params["uid"],
        request.path_params["webhook_uid"],
        bulk.BulkRequest(wanted.since, wanted.until, wanted.label, wanted.outcome, wanted.limit),
        _key(request),
        requested_by,
    )
    answer = {"items": result.items, "counts": result.counts, "retry_after": result.retry_after}
    return json_response(answer)


@routes.get(
    HOOK + "/replays",
    "Replays of a webhook's deliveries, newest first, with their progress",
    response=ReplayList,
)
async def replays(request: Request, query: Query[ReplayQuery]) -> Response:
    principal = await principal_of(request)
    services = services_of(request)
    limit = query.read().limit
    async with services.database.read() as conn:
        await get_accessible_factory(conn, principal, request.path_params["uid"])
        items = await list_replays(
            conn, request.path_params["uid"], request.path_params["webhook_uid"], limit
        )
    return json_response({"replays": items})
