"""The shapes of event subscriptions: what a caller asks for, and the subscription as every
reader sees it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.events.catalogue import EventPattern
from gateway.kernel.types import Timestamp

Url = Annotated[
    str,
    Meta(
        min_length=8,
        max_length=2000,
        pattern=r"^https?://[^\s/?#]+[^\s]*$",
        description="an http(s) URL; private and loopback addresses are refused at delivery "
        "unless GATEWAY_OUTBOUND_ALLOW_PRIVATE=1",
    ),
]
Patterns = Annotated[list[EventPattern], Meta(min_length=1, max_length=50)]
Description = Annotated[str, Meta(max_length=500)]
ShownOnce = Annotated[str, Meta(description="`whsec_...`: shown once; keep it to verify")]


class SubscriptionCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """`events`: exact types (`run.succeeded`) and prefix patterns (`run.*`). With
    `factory_uid`, only the events of that factory of the team."""

    url: Url
    events: Patterns
    description: Description | None = None
    factory_uid: str | None = None


class SubscriptionPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only these fields change. Enabling clears what disabled it."""

    url: Url | UnsetType = UNSET
    events: Patterns | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    description: Description | UnsetType | None = UNSET


class EventSubscription(Struct, kw_only=True, omit_defaults=True):
    uid: str
    url: str
    events: list[str]
    enabled: bool
    created_at: Timestamp
    updated_at: Timestamp
    description: str | UnsetType = UNSET
    factory_uid: str | UnsetType = UNSET
    disabled_reason: (
        Annotated[str, Meta(description="why the service disabled it (410, failing too long)")]
        | UnsetType
    ) = UNSET
    failing_since: Timestamp | UnsetType = UNSET
    secret: ShownOnce | UnsetType = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], secret: str | None = None) -> EventSubscription:
        def known(value: Any) -> Any:
            return UNSET if value is None else value

        return cls(
            uid=row.uid,
            url=row.url,
            events=list(row.events),
            enabled=row.enabled,
            created_at=row.created_at,
            updated_at=row.updated_at,
            description=known(row.description),
            factory_uid=known(row.factory_uid),
            disabled_reason=known(row.disabled_reason),
            failing_since=known(row.failing_since),
            secret=known(secret),
        )


class SubscriptionList(Struct, kw_only=True):
    event_subscriptions: list[EventSubscription]


class RotatedSubscriptionSecret(Struct, kw_only=True):
    secret: ShownOnce
    previous_secret_expires_at: Annotated[
        datetime, Meta(tz=True, description="until then messages carry both signatures")
    ]


class StreamQuery(Struct, kw_only=True, forbid_unknown_fields=True):
    types: (
        Annotated[
            str,
            Meta(
                max_length=2000,
                description="comma-separated event types and `prefix.*` patterns (default all)",
            ),
        ]
        | None
    ) = None
