"""The shapes of automations: what a caller asks for, and the automation as every reader sees
it. One description each: the API decodes requests into them, the rules take and return them,
and the OpenAPI document is made from them.

The Structs check shape only; whether a payload filter compiles is a rule
(`management.check_filters`), so a stored automation reads back without its filters being
parsed again."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.api.fields import Timestamp
from gateway.types import JsonObject

MAX_TRIGGERS = 20
MAX_PROMPT = 100_000

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Prompt = Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")]


class TriggerFilter(Struct, kw_only=True, forbid_unknown_fields=True):
    webhook_ids: Annotated[
        list[str],
        Meta(
            min_length=1,
            max_length=1,
            description="exactly one webhook of this factory (add one trigger per webhook)",
        ),
    ]
    payload: (
        Annotated[
            JsonObject,
            Meta(description="payload filter (docs/filters.md); absent or {} matches all"),
        ]
        | UnsetType
        | None
    ) = UNSET


class Trigger(Struct, kw_only=True, forbid_unknown_fields=True):
    provider: Literal["webhook"]
    event: Literal["received"]
    filter: TriggerFilter

    @property
    def webhook_uid(self) -> str:
        return self.filter.webhook_ids[0]

    @property
    def payload_filter(self) -> JsonObject | None:
        """The payload filter as stored in the trigger index (None: matches all)."""
        payload = self.filter.payload
        return payload if isinstance(payload, dict) else None


Triggers = Annotated[list[Trigger], Meta(min_length=1, max_length=MAX_TRIGGERS)]


class AutomationCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """The name is stored stripped; triggers as they were sent."""

    name: Name
    prompt: Prompt
    enabled: bool = True
    triggers: Triggers

    def __post_init__(self) -> None:
        self.name = self.name.strip()


class AutomationPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only these fields change."""

    name: Name | UnsetType = UNSET
    prompt: Prompt | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    triggers: Triggers | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            self.name = self.name.strip()


class Automation(Struct, kw_only=True):
    uid: str
    factory_uid: str
    name: str
    prompt: str
    enabled: bool
    triggers: list[Trigger]
    webhooks_deleted: Annotated[
        list[str], Meta(description="trigger webhooks since deleted (those triggers never fire)")
    ]
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def from_row(cls, row: Row[Any], deleted: list[str]) -> Automation:
        """`deleted`: the uids of its trigger webhooks that are deleted."""
        return cls(
            uid=row.uid,
            factory_uid=row.factory_uid,
            name=row.name,
            prompt=row.prompt,
            enabled=row.enabled,
            triggers=stored_triggers(row.triggers),
            webhooks_deleted=sorted(deleted),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


class AutomationList(Struct):
    automations: list[Automation]


def stored_triggers(stored: Any) -> list[Trigger]:
    """The triggers column (JSON, written by `encode_triggers`) as Structs."""
    return msgspec.convert(stored, list[Trigger])


def encode_triggers(triggers: list[Trigger]) -> list[Any]:
    """Triggers as the triggers column holds them: as they were sent (an absent payload stays
    absent)."""
    encoded: list[Any] = msgspec.to_builtins(triggers)
    return encoded
