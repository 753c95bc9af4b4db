"""The shapes of agent runs: the run as the store holds it (`RunRecord`, made from a row once),
the RunItem official clients parse (docs/api.md), and the requests and answers of /agent/runs.
One description each: the API decodes requests into them, the rules take and return them, and
the OpenAPI document is made from them. `Creator` and `AgentConfig` serve tasks and scheduled
agents too."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.api.fields import Cursor, Limit, Moment, Timestamp, in_utc
from gateway.api.pagination import PageInfo
from gateway.types import JsonObject

RUN_STATES = (
    "QUEUED",
    "PENDING",
    "CLAIMED",
    "INPROGRESS",
    "SUCCEEDED",
    "FAILED",
    "BLOCKED",
    "ERROR",
    "CANCELLED",
)
if TYPE_CHECKING:
    RunState = str
else:  # the states the domain knows, as an enum
    RunState = Literal[RUN_STATES]

CANCELLABLE_TYPES = frozenset({"cloud"})  # local and CI-action runs cannot be cancelled here
MAX_PROMPT = 100_000
T = TypeVar("T")

ConfigValue = Annotated[str, Meta(max_length=2000)] | None | UnsetType


class RunHarness(Struct, kw_only=True, forbid_unknown_fields=True):
    """The harness a run executes in: `oz` (its model a Warp model id), `claude`, `codex`,
    `gemini` (their own model ids)."""

    type: str
    model: str
    reasoning_level: str | UnsetType = UNSET


class AgentConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    """In a request, null values are dropped; an answer holds only the keys that are set."""

    name: ConfigValue = UNSET
    model_id: (
        Annotated[str, Meta(max_length=2000, description="an enabled model of /agent/models")]
        | UnsetType
        | None
    ) = UNSET
    base_prompt: ConfigValue = UNSET
    environment_id: ConfigValue = UNSET
    worker_host: ConfigValue = UNSET
    skill_spec: (
        Annotated[
            str,
            Meta(
                max_length=500,
                description="owner/repo:skill-name or owner/repo:path/to/SKILL.md; names the run "
                "after the skill unless `name` is given",
            ),
        ]
        | UnsetType
        | None
    ) = UNSET
    mcp_servers: JsonObject | UnsetType = UNSET
    # answers only (a request giving them is a 400): what the service resolved for the run
    agent_uid: (
        Annotated[str, Meta(description="answers only: the agent an automation's runs go to")]
        | UnsetType
    ) = UNSET
    harness: (
        Annotated[
            RunHarness,
            Meta(description="answers only: the harness resolved from a factory's definition"),
        ]
        | UnsetType
    ) = UNSET
    runner: (
        Annotated[
            str,
            Meta(description="answers only: the runner configuration (runners/<name>.yaml)"),
        ]
        | UnsetType
    ) = UNSET

    SERVICE_SET: ClassVar[tuple[str, ...]] = ("agent_uid", "harness", "runner")


class Creator(Struct):
    """Who created a run (or a task, or a scheduled agent): a user, or an agent."""

    uid: str
    email: str | None
    display_name: str
    type: Literal["user", "service_account"]


class StatusMessage(Struct):
    message: str
    error_code: str | None
    retryable: bool


class ArtifactItemData(Struct, kw_only=True):
    """A pull request (url, branch, title, state) or a file (artifact_uid ... title)."""

    url: str | UnsetType = UNSET
    branch: str | UnsetType = UNSET
    artifact_uid: str | UnsetType = UNSET
    filename: str | UnsetType = UNSET
    filepath: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size_bytes: int | UnsetType = UNSET
    description: str | UnsetType = UNSET
    title: str | UnsetType = UNSET
    state: str | UnsetType = UNSET


class RunArtifact(Struct, kw_only=True):
    """An attachment the run came with (`type` attachment: for example the payload of the
    delivery that started it), or something it produced (`artifact_type` FILE, PULL_REQUEST,
    PLAN, with its `data`: GET /agent/artifacts/{artifact_uid} has the details)."""

    type: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    content_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    attachment_id: str | UnsetType = UNSET
    artifact_type: str | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    data: ArtifactItemData | UnsetType = UNSET


class RunRecord(Struct, kw_only=True, frozen=True):
    """A run as the store holds it (tables.runs): what the rules read and decide on."""

    run_id: str
    team_uid: str | None
    factory_uid: str | None
    conversation_id: str
    parent_run_id: str | None
    root_run_id: str
    title: str | None
    prompt: str
    state: RunState
    source: str
    run_type: str
    creator_kind: str | None
    creator_uid: str | None
    agent_config: AgentConfig | None
    metadata: dict[str, str] | None
    status_message: StatusMessage | None
    session_id: str | None
    session_link: str | None
    ticket_ref: str | None
    ticket_url: str | None
    artifacts: list[RunArtifact] | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    task_pending: bool
    delivery_id: str | None
    automation_uid: str | None
    agent_uid: str | None
    mode: str | None
    failed_at: datetime | None
    runner_uid: str | None
    lease_expires_at: datetime | None
    lease_renewed_at: datetime | None
    attempts: int

    @classmethod
    def from_row(cls, row: Row[Any]) -> RunRecord:
        """A row of `select(tables.runs)`; its JSON columns become their Structs."""
        return msgspec.convert(row, cls, from_attributes=True)


class RunItem(Struct, kw_only=True):
    """RunItem, as the official clients parse it; optional fields are omitted when unknown."""

    run_id: str
    task_id: Annotated[str, Meta(description="equals run_id")]
    title: str | None
    prompt: str
    state: RunState
    created_at: Timestamp
    updated_at: Timestamp
    conversation_id: str
    source: Annotated[str, Meta(description="API or WEBHOOK")]
    is_run_type_cancellable: bool
    started_at: Timestamp | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    session_link: str | UnsetType = UNSET
    parent_run_id: str | UnsetType = UNSET
    agent_config: AgentConfig | UnsetType = UNSET
    creator: Creator | UnsetType = UNSET
    metadata: (
        Annotated[
            dict[str, str],
            Meta(description="webhook runs: automation_id, webhook_uid, delivery_id"),
        ]
        | UnsetType
    ) = UNSET
    status_message: StatusMessage | UnsetType = UNSET
    artifacts: list[RunArtifact] | UnsetType = UNSET

    @classmethod
    def of(cls, run: RunRecord, creator: Creator | None = None) -> RunItem:
        return cls(
            run_id=run.run_id,
            task_id=run.run_id,
            title=run.title,
            prompt=run.prompt,
            state=run.state,
            created_at=run.created_at,
            updated_at=run.updated_at,
            conversation_id=run.conversation_id,
            source=run.source,
            is_run_type_cancellable=run.run_type in CANCELLABLE_TYPES,
            started_at=known(run.started_at),
            session_id=known(run.session_id),
            session_link=known(run.session_link),
            parent_run_id=known(run.parent_run_id),
            agent_config=known(run.agent_config),
            creator=known(creator),
            metadata=known(run.metadata),
            status_message=known(run.status_message),
            artifacts=known(run.artifacts),
        )


def known(value: T | None) -> T | UnsetType:
    """A value for an optional field that is absent when unknown."""
    return UNSET if value is None else value


ONE_OF = "give at most one of parent_run_id and conversation_id"


class RunCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")]
    title: Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")] | None = None
    config: AgentConfig | None = None
    parent_run_id: (
        Annotated[
            str,
            Meta(min_length=1, max_length=64, description=f"start a child in its tree; {ONE_OF}"),
        ]
        | None
    ) = None
    conversation_id: (
        Annotated[
            str,
            Meta(min_length=1, max_length=64, description=f"a new top-level run in it; {ONE_OF}"),
        ]
        | None
    ) = None


class RunCreated(Struct):
    run_id: str
    task_id: str
    state: RunState


class RunList(Struct):
    runs: list[RunItem]
    page_info: PageInfo


class RunFilters(Struct, kw_only=True):
    state: Annotated[list[RunState], Meta(description="any of these states")] = []
    name: Annotated[str, Meta(description="agent_config.name")] | None = None
    config_name: Annotated[str, Meta(description="alias of name (name wins)")] | None = None
    model_id: Annotated[str, Meta(description="agent_config.model_id")] | None = None
    creator: Annotated[str, Meta(description="creator uid or email (any case)")] | None = None
    source: Annotated[str, Meta(description="API or WEBHOOK (any case)")] | None = None
    q: Annotated[str, Meta(description="substring of title or prompt (any case)")] | None = None
    created_after: Moment | None = None
    created_before: Moment | None = None
    updated_after: Moment | None = None
    limit: Limit = 50
    cursor: Cursor | None = None
    sort_by: Literal["created_at", "updated_at"] = "updated_at"
    sort_order: Literal["asc", "desc"] = "desc"

    def __post_init__(self) -> None:
        self.created_after = in_utc(self.created_after, "created_after")
        self.created_before = in_utc(self.created_before, "created_before")
        self.updated_after = in_utc(self.updated_after, "updated_after")
