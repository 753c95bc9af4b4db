"""Trigger providers, their events, and the filter keys each event takes: the one table that
parsing, provider event normalization and matching read. Plain frozen data; look-ups through
`event_spec` and `provider_spec`."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Literal

from msgspec import Struct

__all__ = [
    "CATALOGUE",
    "WEBHOOK_UID_PATTERN",
    "WORK_ITEM_STAGES",
    "EventSpec",
    "FilterKey",
    "KeyAlias",
    "ProviderSpec",
    "ValueType",
    "event_spec",
    "provider_spec",
]

ValueType = Literal["string", "integer"]
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
GITHUB_ID_PATTERN = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"


class FilterKey(Struct, frozen=True, kw_only=True):
    """One canonical filter key of an event. Values are strings unless `value_type` says
    otherwise; `in_only` keys reject `not_in`; a `required` key must hold at least one value;
    a `distinct` key refuses a value listed twice."""

    name: str
    value_type: ValueType = "string"
    in_only: bool = False
    required: bool = False
    max_values: int | None = None
    distinct: bool = False  # a value may be listed once (references: a webhook, a schedule)
    pattern: str | None = None
    pattern_hint: str = ""
    known_values: tuple[str, ...] = ()
    note: str = ""


class KeyAlias(Struct, frozen=True, kw_only=True):
    """An authoring spelling rewritten to `canonical`. A `by_name` alias takes a plain list of
    names that apply resolves to ids (no `in`/`not_in`)."""

    name: str
    canonical: str
    by_name: bool = False


class EventSpec(Struct, frozen=True, kw_only=True):
    provider: str
    event: str
    keys: tuple[FilterKey, ...]
    aliases: tuple[KeyAlias, ...] = ()
    payload: bool = False  # takes a `payload` pattern (webhook/received)
    schedule: bool = False  # takes an inline `schedule` (schedule/cron_fired)

    def key(self, name: str) -> FilterKey | None:
        return next((k for k in self.keys if k.name == name), None)

    def alias(self, name: str) -> KeyAlias | None:
        return next((a for a in self.aliases if a.name == name), None)

    def name_alias(self, canonical: str) -> KeyAlias | None:
        """The by-name alias of a canonical key (Slack `channels` of `channel_ids`): what a
        matcher of names is written under."""
        return next((a for a in self.aliases if a.canonical == canonical and a.by_name), None)

    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys) + (("payload",) if self.payload else ())


class ProviderSpec(Struct, frozen=True, kw_only=True):
    name: str
    events: tuple[EventSpec, ...]

    def event(self, name: str) -> EventSpec | None:
        return next((e for e in self.events if e.event == name), None)

    def event_names(self) -> tuple[str, ...]:
        return tuple(e.event for e in self.events)


# provider, events, filter keys: factory-format.md section 4, one row per group of events
_TABLE: tuple[tuple[str, str, str], ...] = (
    ("github", "push", "repos branches paths"),
    ("github", "issue_created issue_labeled", "repos labels assignees authors"),
    (
        "github",
        "pull_request_opened pull_request_ready pull_request_closed pull_request_merged "
        "pull_request_labeled pull_request_synchronized pull_request_reopened",
        "repos base_branches pr_numbers paths assignees authors labels",
    ),
    ("github", "issue_mentioned pull_request_mentioned", "repos mentioned labels"),
    ("github", "issue_assigned pull_request_assigned", "repos assignees labels"),
    ("github", "pull_request_review_requested", "repos reviewers reviewer_teams"),
    ("github", "pull_request_review_submitted", "repos mentioned labels review_states"),
    ("github", "check_suite_completed", "repos conclusions branches labels authors"),
    ("github", "workflow_run_completed", "repos conclusions branches workflows labels authors"),
    ("github", "check_run_rerequested check_suite_rerequested", "repos"),
    ("gitlab", "merge_request", "repos actions base_branches"),
    ("gitlab", "bot_mentioned", "repos mentioned"),
    (
        "linear",
        "issue_created issue_labeled issue_state_changed issue_assigned",
        "team_ids project_ids labels state_ids assignee_ids mentioned_user_ids creator_ids",
    ),
    (
        "linear",
        "comment_created",
        "team_ids project_ids labels state_ids issue_ids mentioned_user_ids creator_ids",
    ),
    ("linear", "agent_session_created", "team_ids creator_ids keywords"),
    ("jira", "issue_created issue_labeled", "project_keys labels"),
    ("jira", "status_changed", "project_keys status_ids"),
    ("jira", "agent_session_created", "project_keys labels keywords"),
    (
        "slack",
        "app_mention message_dm message_im message_mpim message_posted",
        "channel_ids user_ids keywords",
    ),
    ("slack", "reaction_added", "channel_ids user_ids emojis keywords item_user_ids"),
    ("slack", "member_joined_channel", "channel_ids user_ids"),
    ("teams", "app_mention message_posted", "team_ids channel_ids keywords user_ids"),
    ("schedule", "cron_fired", "schedule_ids"),
    ("factory", "work_item_stage_changed", "stages"),
    ("webhook", "received", "webhook_ids"),
)

# The task stages of this server (gateway.platform.tasks.tasks.TaskStage; a test keeps them equal)
WORK_ITEM_STAGES = ("TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED")
WEBHOOK_UID_PATTERN = r"^wh_[0-9a-f]{32}$"
_SLACK_USER = {"pattern": r"^[UWB][A-Z0-9]{2,}$", "pattern_hint": "a Slack user id like U0123ABCD"}
_LINEAR_ID_KEYS = (
    "team_ids",
    "project_ids",
    "state_ids",
    "assignee_ids",
    "issue_ids",
    "mentioned_user_ids",
    "creator_ids",
)
_LINEAR_ID = {"pattern": UUID_PATTERN, "pattern_hint": "a Linear id (a UUID)"}

# (provider, key) -> what differs from a plain string key
_SPECIAL_KEYS: dict[tuple[str, str], dict[str, Any]] = {
    ("github", "repos"): {
        "pattern": GITHUB_ID_PATTERN,
        "pattern_hint": "owner/name, like acme/api-service",
    },
    ("github", "pr_numbers"): {"value_type": "integer"},
    ("gitlab", "mentioned"): {
        "note": "accepted and stored, no effect: bot_mentioned is already addressed to the bot"
    },
    **{("linear", key): _LINEAR_ID for key in _LINEAR_ID_KEYS},
    ("slack", "channel_ids"): {
        "pattern": r"^[CGD][A-Z0-9]{2,}$",
        "pattern_hint": "a Slack channel id like C0123ABCD",
    },
    ("slack", "user_ids"): _SLACK_USER,
    ("slack", "item_user_ids"): _SLACK_USER,
    ("teams", "team_ids"): {
        "required": True,
        "in_only": True,
        "max_values": 1,
        "pattern": UUID_PATTERN,
        "pattern_hint": "a Microsoft Graph team id (a UUID)",
    },
    ("teams", "channel_ids"): {
        "required": True,
        "in_only": True,
        "pattern": r"^19:.+@thread\.[a-z0-9]+$",
        "pattern_hint": "a Teams channel id like 19:abc...@thread.tacv2",
    },
    ("schedule", "schedule_ids"): {"in_only": True, "distinct": True},
    ("factory", "stages"): {"known_values": WORK_ITEM_STAGES},
    ("webhook", "webhook_ids"): {
        "in_only": True,
        "distinct": True,
        "required": True,
        "pattern": WEBHOOK_UID_PATTERN,
        "pattern_hint": "a webhook UID (wh_...)",
    },
}

# authoring spellings, rewritten to the canonical key (for the events that have it)
_ALIASES: dict[str, tuple[KeyAlias, ...]] = {
    "github": (
        KeyAlias(name="baseBranches", canonical="base_branches"),
        KeyAlias(name="prNumbers", canonical="pr_numbers"),
    ),
    "linear": tuple(
        KeyAlias(name=alias, canonical=f"{alias[:-1]}_ids", by_name=True)
        for alias in ("teams", "projects", "states", "issues")
    ),
    "slack": (
        KeyAlias(name="channels", canonical="channel_ids", by_name=True),
        KeyAlias(name="users", canonical="user_ids", by_name=True),
        KeyAlias(name="itemUsers", canonical="item_user_ids", by_name=True),
    ),
}
_EVENT_FLAGS: dict[tuple[str, str], dict[str, bool]] = {
    ("schedule", "cron_fired"): {"schedule": True},
    ("webhook", "received"): {"payload": True},
}


def _event(provider: str, event: str, key_names: list[str]) -> EventSpec:
    keys = tuple(
        FilterKey(name=name, **_SPECIAL_KEYS.get((provider, name), {})) for name in key_names
    )
    aliases = tuple(a for a in _ALIASES.get(provider, ()) if a.canonical in key_names)
    flags = _EVENT_FLAGS.get((provider, event), {})
    return EventSpec(provider=provider, event=event, keys=keys, aliases=aliases, **flags)


def _build() -> tuple[ProviderSpec, ...]:
    events: dict[str, list[EventSpec]] = {}
    for provider, names, keys in _TABLE:
        for event in names.split():
            events.setdefault(provider, []).append(_event(provider, event, keys.split()))
    return tuple(ProviderSpec(name=p, events=tuple(e)) for p, e in events.items())


CATALOGUE: tuple[ProviderSpec, ...] = _build()
_PROVIDERS = MappingProxyType({p.name: p for p in CATALOGUE})


def provider_spec(provider: str) -> ProviderSpec | None:
    return _PROVIDERS.get(provider)


def event_spec(provider: str, event: str) -> EventSpec | None:
    spec = _PROVIDERS.get(provider)
    return spec.event(event) if spec else None
