"""The shapes of the delivery log, its outcome traces, replays and filter backtests: what a
caller asks for and what every reader (the API, the console) gets. One description each: the
API decodes requests into them, the rules return them, and the OpenAPI document is made from
them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.foundation.api.fields import Moment, Timestamp
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.backends.contract import Label
from gateway.kernel.rejections import Reason
from gateway.kernel.types import JsonObject
from gateway.webhook_gateway.automations.management import filter_fault

MAX_BULK = 100  # deliveries replayed by one bulk request
MAX_WINDOW = 500  # deliveries a backtest reads

Outcome = Literal[
    "matched",
    "no_match",
    "no_automations",
    "webhook_not_live",
    "no_foreman",
    "connection_not_live",
    "no_events",
]
Evaluation = Literal["pending", "evaluated", "failed"]


class DeliveryRun(Struct):
    automation_uid: str
    run_id: str


class DeliveryFollowUp(Struct):
    work_item_id: str
    run_id: Annotated[str, Meta(description="the work item's run the delivery was sent to")]


class ConsideredAutomation(Struct):
    automation_uid: str
    matched: bool
    mismatch: Annotated[
        str | None,
        Meta(
            description="not matched: the first filter condition that failed, e.g. "
            '`$.action: "closed" not in ["opened"]`'
        ),
    ] = None
    path: Annotated[str | None, Meta(description="the JSON path of that condition")] = None
    filter_changed: (
        Annotated[
            bool,
            Meta(
                description="not matched, GET one: the automation changed since the delivery "
                "was evaluated, and the mismatch is explained against its current filter"
            ),
        ]
        | UnsetType
    ) = UNSET
    factory_uid: (
        Annotated[str, Meta(description="provider deliveries, GET one: the automation's factory")]
        | UnsetType
    ) = UNSET
    trigger: (
        Annotated[
            int,
            Meta(
                description="provider deliveries, GET one: the position (from 0) of the trigger "
                "that decided, in the automation's triggers: the first that matched, else the "
                "first listening to the delivery's events"
            ),
        ]
        | UnsetType
    ) = UNSET
    key: (
        Annotated[
            str | None,
            Meta(
                description="provider deliveries, GET one: the filter key of that trigger the "
                "event failed (null when it matched); a by-name key as `teams (names)`"
            ),
        ]
        | UnsetType
    ) = UNSET


class TriggerEventView(Struct, kw_only=True):
    """One trigger event a provider delivery was normalized to (docs/providers.md)."""

    provider: str
    event: str
    values: (
        Annotated[
            dict[str, list[Any]],
            Meta(description="GET one: each filter key and the values it is matched on"),
        ]
        | UnsetType
    ) = UNSET


class Trace(Struct):
    outcome: Annotated[
        Outcome,
        Meta(description='what the evaluator decided (docs/ingress.md, "Outcome trace")'),
    ]
    automations: Annotated[
        list[ConsideredAutomation],
        Meta(
            description="every enabled automation listening to the webhook when evaluated (a "
            "provider delivery: to its events, in the factories they reach)"
        ),
    ]
    events: (
        Annotated[
            list[TriggerEventView],
            Meta(description="provider deliveries: the trigger events it was normalized to"),
        ]
        | UnsetType
    ) = UNSET
    reason: (
        Annotated[
            str,
            Meta(
                description='outcome no_automations: why nothing listened ("repository '
                "Codertocat/Hello-World is in no factory's repositories ...\")"
            ),
        ]
        | UnsetType
    ) = UNSET


class Delivery(Struct, kw_only=True):
    delivery_id: str
    received_at: Timestamp
    size: Annotated[int, Meta(ge=0, description="body size in bytes")]
    label: Label
    evaluation: Annotated[
        Evaluation | None,
        Meta(
            description="accepted deliveries: pending until matched against the automations "
            "(the runs are listed then), failed when matches could start no run; null for the "
            "others"
        ),
    ]
    evaluated_at: Annotated[
        Timestamp | None, Meta(description="when the evaluator matched it (accepted ones)")
    ]
    trace: Annotated[
        Trace | None, Meta(description="why the delivery did or did not start runs (evaluated)")
    ]
    replay_of: Annotated[
        str | None, Meta(description="the delivery this one replays (POST .../replay)")
    ]
    reason: Annotated[
        Reason | None,
        Meta(
            description='rejected deliveries: why (docs/ingress.md, "Rejection reasons"); '
            "never sent to the sender. Null for accepted and duplicate ones and for rejections "
            "logged before reasons were recorded"
        ),
    ] = None
    duplicate_of: Annotated[
        str | None, Meta(description="duplicates: the id of the first delivery of this event")
    ] = None
    runs: Annotated[list[DeliveryRun], Meta(description="runs started by matching automations")]
    follow_ups: Annotated[
        list[DeliveryFollowUp],
        Meta(
            description="provider deliveries: the work items it continued, a follow-up of their "
            "run instead of a new run (docs/providers.md#work-items)"
        ),
    ] = []
    replays: (
        Annotated[list[str], Meta(description="deliveries replaying this one; GET one only")]
        | UnsetType
    ) = UNSET
    headers: (
        Annotated[
            dict[str, str] | None,
            Meta(
                description="accepted deliveries, on GET one only: the request headers (names "
                'lower case), credentials and signatures replaced by "[redacted]" '
                "(docs/ingress.md); null for deliveries logged before headers were kept"
            ),
        ]
        | UnsetType
    ) = UNSET
    payload: (
        Annotated[Any, Meta(description="the JSON body; accepted deliveries, on GET one only")]
        | UnsetType
    ) = UNSET

    @property
    def position(self) -> tuple[datetime, str]:
        """Where it stands in the log's order."""
        return self.received_at, self.delivery_id


class DeliveryList(Struct):
    deliveries: list[Delivery]
    page_info: PageInfo


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
    limit: Annotated[int, Meta(ge=1, le=MAX_BULK)] = 50

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
    evaluation: Evaluation | None
    outcome: Outcome | None
    runs: int


class ReplayList(Struct):
    replays: list[ReplayItem]


Last = Annotated[int, Meta(ge=1, le=MAX_WINDOW, description="the newest this many deliveries")]


class FilterTest(Struct, kw_only=True, forbid_unknown_fields=True):
    """Exactly one of `payload` (a payload filter) and `automation_uid`."""

    payload: (
        Annotated[JsonObject, Meta(description="a payload filter (docs/filters.md)")] | UnsetType
    ) = UNSET
    automation_uid: str | UnsetType = UNSET
    last: Last = 50
    since: Moment | None = None

    def __post_init__(self) -> None:
        if (self.payload is UNSET) == (self.automation_uid is UNSET):
            raise ValueError("payload: give either payload or automation_uid")
        if self.payload is not UNSET and (fault := filter_fault(self.payload)):
            raise ValueError(f"payload: {fault}")


class ProviderFilterTest(Struct, kw_only=True, forbid_unknown_fields=True):
    """Exactly one of `trigger` (a trigger as an automation writes it, of the connection's
    provider) and `automation_uid` (an automation of the connection's team: its triggers of
    that provider, in its factory)."""

    trigger: (
        Annotated[
            JsonObject,
            Meta(description="{provider, event, filter?} (docs/factory-files.md, Triggers)"),
        ]
        | UnsetType
    ) = UNSET
    automation_uid: str | UnsetType = UNSET
    last: Last = 50
    since: Moment | None = None

    def __post_init__(self) -> None:
        if (self.trigger is UNSET) == (self.automation_uid is UNSET):
            raise ValueError("trigger: give either trigger or automation_uid")


class TestedDelivery(Struct):
    delivery_id: str
    received_at: Timestamp
    matched: bool
    mismatch: Annotated[
        str | None, Meta(description="not matched: the first filter condition that failed")
    ]
    path: Annotated[
        str | None,
        Meta(description="the JSON path of that condition (provider triggers: its filter key)"),
    ]


class FilterTestResult(Struct):
    tested: int
    matched: int
    deliveries: Annotated[list[TestedDelivery], Meta(description="newest first")]


class TriggerTest(Struct):
    webhook_uid: str
    tested: int
    matched: int
    deliveries: list[TestedDelivery]


class DryRun(Struct):
    valid: Annotated[bool, Meta(description="the automation would be saved as sent")]
    triggers: Annotated[list[TriggerTest], Meta(description="one per trigger, in order")]
