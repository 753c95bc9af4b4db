"""The shapes of automations: what a caller asks for, and the automation as every reader sees
it. One description each: the API decodes requests into them, the rules take and return them,
and the OpenAPI document is made from them.

Triggers of every provider are checked by the rules of factory files
(`factory_format.check_plain_triggers`, docs/factory-files.md "Triggers"): the request holds
them as sent, the triggers column holds factory_format's canonical form, and an answer shows
them back in the form they are written in (`TriggerView.of`), whether the API or a definition
file wrote them."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from factory_format import EffectiveConfig, RunConfig
from factory_format import Trigger as CanonicalTrigger
from factory_format.triggers import event_spec
from gateway.foundation.api.fields import Timestamp
from gateway.foundation.store.rows import from_row
from gateway.kernel.types import JsonObject

MAX_TRIGGERS = 20
MAX_PROMPT = 100_000

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Prompt = Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")]
TRIGGERS_DOC = (
    "{provider, event, filter?, schedule?} each, as in an automation file: the events and "
    "filter keys of every provider are docs/factory-files.md's trigger catalogue; webhook "
    "triggers name webhooks of this factory in filter.webhook_ids and may hold a payload "
    "filter in filter.payload (docs/filters.md)"
)
Triggers = Annotated[
    list[Any], Meta(min_length=1, max_length=MAX_TRIGGERS, description=TRIGGERS_DOC)
]


AgentUid = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        description="the agent its runs go to (an agent of the factory's team; absent or null: "
        "the factory's foreman); each run carries that agent's configuration as it is when the "
        "run is made (agent_config), and is pinned to its worker_host",
    ),
]


class AutomationCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """The name is stored stripped; triggers in their canonical form."""

    name: Name
    prompt: Prompt
    enabled: bool = True
    triggers: Triggers
    agent_uid: AgentUid | None = None

    def __post_init__(self) -> None:
        self.name = self.name.strip()


class AutomationPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only these fields change."""

    name: Name | UnsetType = UNSET
    prompt: Prompt | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
    triggers: Triggers | UnsetType = UNSET
    agent_uid: AgentUid | UnsetType | None = UNSET  # null: back to the foreman

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            self.name = self.name.strip()


class TriggerSchedule(Struct, kw_only=True, omit_defaults=True):
    cron: Annotated[str, Meta(description="robfig/cron, always UTC")]
    name: str | UnsetType = UNSET


class TriggerView(Struct, kw_only=True, omit_defaults=True):
    """A trigger as it is written: a filter key with only `in` values is a plain list, a
    Linear or Slack name list under its by-name key (`channels`), a webhook payload filter
    under filter.payload."""

    provider: str
    event: str
    filter: JsonObject | UnsetType = UNSET
    schedule: TriggerSchedule | UnsetType = UNSET

    @classmethod
    def of(cls, trigger: CanonicalTrigger) -> TriggerView:
        written: JsonObject = {}
        for key, matcher in trigger.filter.items():
            if matcher.by_name:
                written[_by_name_key(trigger, key)] = list(matcher.in_)
            elif matcher.not_in:
                ops: JsonObject = {"in": list(matcher.in_)} if matcher.in_ else {}
                written[key] = {**ops, "not_in": list(matcher.not_in)}
            else:
                written[key] = list(matcher.in_)
        if trigger.payload:
            written["payload"] = trigger.payload
        schedule = trigger.schedule
        return cls(
            provider=trigger.provider,
            event=trigger.event,
            filter=written if written else UNSET,
            schedule=UNSET
            if schedule is None
            else TriggerSchedule(cron=schedule.cron, name=schedule.name or UNSET),
        )


class Automation(Struct, kw_only=True):
    uid: str
    factory_uid: str
    name: str
    prompt: str
    enabled: bool
    triggers: list[TriggerView]
    webhooks_deleted: Annotated[
        list[str], Meta(description="trigger webhooks since deleted (those triggers never fire)")
    ]
    created_at: Timestamp
    updated_at: Timestamp
    definition_name: (
        Annotated[
            str,
            Meta(
                description="declared by automations/<definition_name> of the factory's "
                "definition files, which apply keeps it equal to"
            ),
        ]
        | UnsetType
    ) = UNSET
    agent_uid: (
        Annotated[str, Meta(description="the agent its runs go to (absent: the foreman)")]
        | UnsetType
    ) = UNSET
    config: (
        Annotated[RunConfig, Meta(description="per-run overrides its file declares")] | UnsetType
    ) = UNSET
    effective: (
        Annotated[
            EffectiveConfig,
            Meta(description="agentDefaults -> agent -> automation, resolved: what its runs use"),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], deleted: list[str]) -> Automation:
        """`deleted`: the uids of its trigger webhooks that are deleted."""
        layers = FileLayers.stored(row.definition)
        return from_row(
            cls,
            row,
            triggers=[TriggerView.of(trigger) for trigger in stored_triggers(row.triggers)],
            webhooks_deleted=sorted(deleted),
            definition_name=row.definition_name or UNSET,
            agent_uid=row.agent_uid or UNSET,
            config=UNSET if layers is None else layers.config,
            effective=UNSET if layers is None else layers.effective,
        )


class AutomationList(Struct):
    automations: list[Automation]


class FileLayers(Struct, kw_only=True):
    """automations.definition: a file automation's own layer and what it resolves to."""

    config: RunConfig
    effective: EffectiveConfig

    @classmethod
    def stored(cls, value: Any) -> FileLayers | None:
        return None if value is None else msgspec.convert(value, cls)


def stored_triggers(stored: Any) -> list[CanonicalTrigger]:
    """The triggers column (canonical JSON, written by `encode_triggers`) as Triggers."""
    return msgspec.convert(stored, list[CanonicalTrigger])


def encode_triggers(triggers: list[CanonicalTrigger]) -> list[Any]:
    """Triggers as the triggers column holds them: canonical, defaults left out."""
    encoded: list[Any] = json_form(triggers)
    return encoded


def json_form(value: Any) -> Any:
    """`value` as plain JSON data (lists, not tuples), equal to what a JSON column reads back."""
    return msgspec.json.decode(msgspec.json.encode(value))


def _by_name_key(trigger: CanonicalTrigger, key: str) -> str:
    spec = event_spec(trigger.provider, trigger.event)
    alias = spec.name_alias(key) if spec else None
    return alias.name if alias else key


def webhook_uids(trigger: CanonicalTrigger) -> tuple[str, ...]:
    """The webhooks a webhook trigger listens to; () for other providers."""
    matcher = trigger.filter.get("webhook_ids")
    if trigger.provider != "webhook" or matcher is None:
        return ()
    return tuple(str(uid) for uid in matcher.in_)
