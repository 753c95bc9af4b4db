"""The shapes of scheduled agents (/agent/schedules), with the field names of the official
client's ScheduledAgentItem: what a caller asks for and the schedule as every reader sees it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp, unless_none
from gateway.foundation.store.rows import from_row
from gateway.platform.runs.record.models import MAX_PROMPT, AgentConfig, Creator

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
CronSchedule = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        description="5 fields (minute hour day-of-month month day-of-week), in UTC",
    ),
]
Prompt = Annotated[
    str,
    Meta(max_length=MAX_PROMPT, description="required unless agent_config.skill_spec is given"),
]
AgentUid = Annotated[
    str, Meta(min_length=1, max_length=64, description="a team agent to run as (team-owned only)")
]
Metadata = Annotated[
    dict[str, str], Meta(description="at most 20 keys of [a-zA-Z0-9._-]{1,64}; values <= 256 bytes")
]
Mode = Literal["normal", "plan", "orchestrate"]


class ScheduleCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    cron_schedule: CronSchedule
    prompt: Prompt | None = None
    agent_config: AgentConfig | None = None
    agent_uid: AgentUid | None = None
    enabled: Annotated[bool, Meta(description="active at once (default true)")] = True
    metadata: Metadata | None = None
    mode: Mode | None = None
    team: (
        Annotated[bool, Meta(description="team-owned (default for a user of a single team)")] | None
    ) = None


class ScheduleUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Replaces the schedule; agent_config absent or null keeps the current one."""

    name: Name
    cron_schedule: CronSchedule
    enabled: bool
    prompt: Prompt | None = None
    agent_config: AgentConfig | None = None
    agent_uid: AgentUid | None = None
    metadata: Metadata | None = None
    mode: Mode | None = None


class ScheduleScope(Struct):
    type: Literal["User", "Team"]
    uid: str


class ScheduleHistory(Struct):
    last_ran: Timestamp | None
    next_run: Annotated[Timestamp | None, Meta(description="the next slot; null while paused")]


class ScheduledAgent(Struct, kw_only=True):
    id: str
    name: str
    cron_schedule: str
    enabled: bool
    prompt: str
    mode: Mode
    created_at: Timestamp
    updated_at: Timestamp
    scope: ScheduleScope
    history: ScheduleHistory
    agent_config: AgentConfig | UnsetType = UNSET
    agent_uid: str | UnsetType = UNSET
    metadata: dict[str, str] | UnsetType = UNSET
    last_spawn_error: (
        Annotated[str, Meta(description="why the last slot could not start a run")] | UnsetType
    ) = UNSET
    created_by: Creator | UnsetType = UNSET
    updated_by: Creator | UnsetType = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], people: dict[str, Creator]) -> ScheduledAgent:
        """`people`: the creators of the principals who created and last changed it."""
        team_owned = row.owner_kind == "team"
        return from_row(
            cls,
            row,
            id=row.uid,
            prompt=row.prompt or "",
            scope=ScheduleScope(
                "Team" if team_owned else "User",
                row.team_uid if team_owned else row.created_by_uid,
            ),
            history=ScheduleHistory(row.last_ran_at, row.next_run_at),
            agent_config=unless_none(row.agent_config),
            agent_uid=unless_none(row.agent_uid),
            metadata=unless_none(row.metadata),
            last_spawn_error=unless_none(row.last_spawn_error),
            created_by=unless_none(people.get(row.created_by_uid)),
            updated_by=unless_none(people.get(row.updated_by_uid)),
        )


class ScheduleList(Struct):
    schedules: Annotated[list[ScheduledAgent], Meta(description="sorted by name")]


class ScheduleDeleted(Struct):
    success: bool
