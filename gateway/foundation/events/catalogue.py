"""Every event type, the shape of its `data`, and the patterns subscriptions and the stream
select types with (exact types and `prefix.*`).

A body on the wire is `{"type", "timestamp", "data"}` (Standard Webhooks); `data` carries the
ids (`run_id`, `factory_uid`, `work_item_id`, ...) and the fields the API's answer of the
resource has. Each `data` shape is a Struct here, so docs and the OpenAPI document's `webhooks`
section are made from the same description the writers fill.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.kernel.errors import InvalidRequest
from gateway.kernel.types import Timestamp


class RunEventData(Struct, kw_only=True, omit_defaults=True):
    """A run as GET /agent/runs/{run_id} answers its summary (the prompt and configuration are
    left out: read the run for them), with what moved it when its state changed."""

    run_id: str
    factory_uid: str | None
    conversation_id: str
    state: str
    title: str | None
    source: str
    created_at: Timestamp
    updated_at: Timestamp
    parent_run_id: str | UnsetType = UNSET
    automation_uid: str | UnsetType = UNSET
    delivery_id: str | UnsetType = UNSET
    runner_uid: str | UnsetType = UNSET
    reason: Annotated[str, Meta(description="why the state changed, when told")] | UnsetType = UNSET


class FollowupEventData(Struct, kw_only=True, omit_defaults=True):
    """A follow-up message reached a run (POST /agent/runs/{run_id}/followups or a provider's
    comment)."""

    run_id: str
    factory_uid: str | None
    conversation_id: str
    state: str
    message: Annotated[str, Meta(description="the follow-up's text, cut at 2,000 characters")]
    received_at: Timestamp


class DeliveryRejectedData(Struct, kw_only=True, omit_defaults=True):
    """Ingress refused deliveries to a webhook or provider connection (for operators): failed
    authentication, refusals by rule. Counted per source and reason over a short window, so a
    flood is one event with a `count`, not one per request."""

    source_uid: Annotated[str, Meta(description="the webhook (wh_) or connection (pcn_) uid")]
    factory_uid: str | None
    reason: Annotated[str, Meta(description="the refusal's reason code, as in the delivery log")]
    count: Annotated[int, Meta(ge=1)]
    first_at: Timestamp
    last_at: Timestamp
    delivery_id: str | UnsetType = UNSET


class ReplyFailedData(Struct, kw_only=True, omit_defaults=True):
    """A reply to a provider (a comment, a status) could not be posted."""

    connection_uid: str
    factory_uid: str | None
    provider: str
    error: str
    run_id: str | UnsetType = UNSET
    work_item_id: str | UnsetType = UNSET
    status: int | UnsetType = UNSET


class WorkItemSource(Struct, kw_only=True):
    """What a work item is about; the work items API answers the same shape."""

    provider: Annotated[str, Meta(description="github, gitlab, slack, linear or jira")]
    kind: Annotated[str, Meta(description="issue, pull_request, merge_request or thread")]
    ref: Annotated[
        str,
        Meta(
            description="the key within the provider: `owner/name#12`, `group/project!3`, "
            "`C123/1515449522.000016` (channel/thread ts), a Linear issue id, `PROJ-12`"
        ),
    ]
    url: str | None


class WorkItemEventData(Struct, kw_only=True, omit_defaults=True):
    """A work item as GET /factory/{uid}/work-items/{id} answers it; `previous_stage` on a
    stage change."""

    work_item_id: str
    factory_uid: str
    source: WorkItemSource
    stage: str
    run_ids: list[str]
    followup_count: int
    created_at: Timestamp
    updated_at: Timestamp
    previous_stage: str | UnsetType = UNSET


# type -> (the shape of its data, what it tells)
EVENT_TYPES: dict[str, tuple[type[Struct], str]] = {
    "run.created": (RunEventData, "A run was created (QUEUED)."),
    "run.state_changed": (RunEventData, "A run entered a new state (any state after QUEUED)."),
    "run.succeeded": (RunEventData, "A run ended SUCCEEDED."),
    "run.failed": (RunEventData, "A run ended FAILED or ERROR."),
    "run.cancelled": (RunEventData, "A run was CANCELLED."),
    "run.followup_received": (FollowupEventData, "A follow-up message reached a run."),
    "work_item.created": (WorkItemEventData, "A work item was created."),
    "work_item.stage_changed": (WorkItemEventData, "A work item moved to another stage."),
    "delivery.rejected": (DeliveryRejectedData, "Ingress refused deliveries (for operators)."),
    "reply.failed": (ReplyFailedData, "A reply to a provider could not be posted."),
}
# the events a run's state brings beside run.state_changed
RUN_END_EVENTS = {
    "SUCCEEDED": "run.succeeded",
    "FAILED": "run.failed",
    "ERROR": "run.failed",
    "CANCELLED": "run.cancelled",
}
MAX_PATTERNS = 50
EventPattern = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        description="an event type (`run.succeeded`) or a prefix pattern (`run.*`; `*`: all)",
    ),
]


def check_patterns(patterns: list[str], field: str) -> list[str]:
    """The patterns, deduplicated in order; a 400 naming `field[i]` for one matching no type."""
    if len(patterns) > MAX_PATTERNS:
        raise InvalidRequest(f"{field}: at most {MAX_PATTERNS} types")
    for i, pattern in enumerate(patterns):
        if not any(matches([pattern], name) for name in EVENT_TYPES):
            known = ", ".join(EVENT_TYPES)
            raise InvalidRequest(
                f"{field}[{i}]: unknown event type {pattern!r} (known: {known}; or `prefix.*`)"
            )
    return list(dict.fromkeys(patterns))


def matches(patterns: list[str], event_type: str) -> bool:
    """Whether `event_type` is one of `patterns` (exact, `prefix.*`, or `*`)."""
    for pattern in patterns:
        if pattern == event_type or pattern == "*":
            return True
        if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
            return True
    return False


def expand(patterns: list[str]) -> list[str]:
    """The event types `patterns` select, in catalogue order (for SQL `IN`)."""
    return [name for name in EVENT_TYPES if matches(patterns, name)]


def body_schemas() -> dict[str, Any]:
    """type -> the JSON Schema of its body `{type, timestamp, data}` (docs and OpenAPI)."""
    import msgspec

    shapes = sorted({shape for shape, _ in EVENT_TYPES.values()}, key=lambda s: s.__name__)
    schemas, components = msgspec.json.schema_components(
        shapes, ref_template="#/components/schemas/{name}"
    )
    described = dict(zip(shapes, schemas, strict=True))
    bodies: dict[str, Any] = {}
    for name, (shape, text) in EVENT_TYPES.items():
        bodies[name] = {
            "description": text,
            "type": "object",
            "required": ["type", "timestamp", "data"],
            "properties": {
                "type": {"const": name},
                "timestamp": {"type": "string", "format": "date-time"},
                "data": described[shape],
            },
        }
    return {"bodies": bodies, "components": components}
