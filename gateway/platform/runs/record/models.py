"""A run as the store holds it (`RunRecord`, made from a row once) and the Structs of its JSON
columns (`AgentConfig`, `StatusMessage`, `RunArtifact`); the RunItem official clients parse
(docs/api.md), and its timeline. One description each: the rules take and return them, and the
OpenAPI document is made from them. `Creator` and `AgentConfig` serve tasks and scheduled agents
too."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp
from gateway.kernel.types import JsonObject
from gateway.platform.runs.record.states import RunState
from gateway.webhook_gateway.replies import ReplyTarget

CANCELLABLE_TYPES = frozenset({"cloud"})  # local and CI-action runs cannot be cancelled here
MAX_PROMPT = 100_000
T = TypeVar("T")

ConfigValue = Annotated[str, Meta(max_length=2000)] | None | UnsetType


class RunHarnessAuth(Struct, kw_only=True, forbid_unknown_fields=True):
    """Where a third-party harness's key comes from: `managedSecret`, the team's managed secret
    `secret_name` (its value reaches the runner holding the claim, never an answer), or
    `workerEnvironment`, the self-hosted worker's own environment."""

    source: Literal["managedSecret", "workerEnvironment"]
    secret_name: str | UnsetType = UNSET


class RunHarness(Struct, kw_only=True, forbid_unknown_fields=True):
    """The harness a run executes in: `oz` (its model a Warp model id), `claude`, `codex`,
    `gemini` (their own model ids). `model_id` is the official clients' name of the model;
    `model` the same id, as runs made before it was added carry it."""

    type: str
    model: str
    model_id: str | UnsetType = UNSET
    reasoning_level: str | UnsetType = UNSET
    auth: RunHarnessAuth | UnsetType = UNSET


class RunAgent(Struct, kw_only=True, forbid_unknown_fields=True):
    """The agent that executes a run."""

    uid: str
    name: str
    type: str | UnsetType = UNSET  # its agentType (FOREMAN, REVIEW, ...; CUSTOM when unset)


class InstanceShape(Struct, kw_only=True, forbid_unknown_fields=True):
    vcpus: int
    memory_gb: int


class RunnerConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    """The runner file (runners/<name>.yaml) a run is prepared with."""

    name: str
    setup_commands: list[str] = []
    docker_image: str | UnsetType = UNSET
    instance_shape: InstanceShape | UnsetType = UNSET


class SkillFile(Struct, kw_only=True, forbid_unknown_fields=True):
    """A file of a skill's directory besides its SKILL.md: its path under the directory."""

    path: str
    content: str


class SkillDocument(Struct, kw_only=True, forbid_unknown_fields=True):
    """A skill a run may use: `scope` `factory` (skills/<name>/SKILL.md, every agent) or
    `agent` (agents/<agent>/skills/<name>/SKILL.md), its SKILL.md text and its directory's
    other text files (`files`) as the runner writes them."""

    name: str
    scope: Literal["factory", "agent"]
    path: str
    description: str | UnsetType = UNSET
    content: str
    files: list[SkillFile] | UnsetType = UNSET


class RunRepository(Struct, kw_only=True, forbid_unknown_fields=True):
    """A repository of the run's factory (factory.yaml `repositories`) on its code forge."""

    provider: Literal["github", "gitlab"]
    owner: str
    name: str


class AgentConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    """In a request, null values are dropped; an answer holds only the keys that are set."""

    name: ConfigValue = UNSET
    model_id: (
        Annotated[str, Meta(max_length=2000, description="an enabled model of /agent/models")]
        | UnsetType
        | None
    ) = UNSET
    base_prompt: Annotated[str, Meta(max_length=MAX_PROMPT)] | UnsetType | None = UNSET
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
    credential_strategy: Literal["CREATOR", "EXECUTOR"] | UnsetType = UNSET
    agent: (
        Annotated[RunAgent, Meta(description="answers only: the agent that executes the run")]
        | UnsetType
    ) = UNSET
    runner_config: (
        Annotated[
            RunnerConfig,
            Meta(description="answers only: the runner file: setup commands, image, shape"),
        ]
        | UnsetType
    ) = UNSET
    skills: (
        Annotated[
            list[str],
            Meta(
                description="answers only: the skills the run may use (factory-wide, then "
                "the agent's own)"
            ),
        ]
        | UnsetType
    ) = UNSET
    secrets: (
        Annotated[
            list[str],
            Meta(
                description="answers only: the names of the managed secrets the run gets "
                "(never their values)"
            ),
        ]
        | UnsetType
    ) = UNSET
    repositories: (
        Annotated[
            list[RunRepository],
            Meta(
                description="answers only: the repositories the run's factory lists, on its code "
                "forge (`gateway runner --checkout` clones the first when the event names none)"
            ),
        ]
        | UnsetType
    ) = UNSET
    # stored with the run, never in an answer (RunItem.of drops it): the skills' text, as the
    # run was created with them; the runner writes them to RUN_SKILLS
    skill_documents: list[SkillDocument] | UnsetType = UNSET

    SERVICE_SET: ClassVar[tuple[str, ...]] = (
        *("agent_uid", "harness", "runner", "agent", "runner_config", "skills", "secrets"),
        *("repositories", "skill_documents"),
    )

    def answered(self) -> AgentConfig:
        """What run answers show of it: all but the skills' text."""
        if self.skill_documents is UNSET:
            return self
        return msgspec.structs.replace(self, skill_documents=UNSET)


class Creator(Struct):
    """Who created a run (or a task, or a scheduled agent): a user, or an agent."""

    uid: str
    email: str | None
    display_name: str
    type: Literal["user", "service_account"]


# the error_code of a run that failed setting up its environment (debug follow-ups, environments)
SETUP_FAILURE = "environment_setup_failed"


class StatusMessage(Struct):
    message: str
    error_code: str | None
    retryable: bool


# what a QUEUED run pinned to a self-hosted worker shows until that worker claims it
WAITING_FOR_WORKER = "waiting_for_worker"
WORKER_UNAVAILABLE = "worker_unavailable"  # ... and the error_code of one that waited too long


def waiting_message(worker: str) -> str:
    """What a QUEUED run pinned to `worker` shows while it waits (runs/record/unclaimed.py)."""
    return (
        f"waiting for self-hosted worker {worker!r}: start `gateway runner --worker-id {worker}`; "
        f"the run fails as {WORKER_UNAVAILABLE} if no such worker claims it within "
        "GATEWAY_WORKER_WAIT_S"
    )


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
    """ArtifactItem of the official client (oz-agent-sdk, `types/agent/artifact_item.py`): a
    file the run came with (a webhook run's event-payload.json) or produced (FILE), or a
    PULL_REQUEST, with its `data` (a FILE's `data.artifact_uid`: GET
    /agent/artifacts/{artifact_uid} has the details and a download link)."""

    artifact_type: Literal["FILE", "PULL_REQUEST"]
    created_at: str
    data: ArtifactItemData


def file_artifact(
    uid: str,
    at: datetime,
    filename: str,
    mime_type: str,
    size: int,
    *,
    filepath: str | None = None,
    description: str | None = None,
    title: str | None = None,
) -> RunArtifact:
    """A FILE entry of a run's `artifacts`."""
    data = ArtifactItemData(
        artifact_uid=uid,
        filename=filename,
        filepath=filepath or filename,
        mime_type=mime_type,
        size_bytes=size,
        description=description or UNSET,
        title=title or UNSET,
    )
    return RunArtifact(artifact_type="FILE", created_at=at.isoformat(), data=data)


# the entry webhook runs were given before: {"type": "attachment", "name", "content_type",
# "size", "attachment_id"}; runs holding it are read in the official shape
_EARLIER_ATTACHMENT = "attachment"


def _official_artifacts(stored: list[Any], created_at: datetime) -> list[Any]:
    """A run's stored `artifacts`, an entry in the earlier attachment shape made a FILE (dated
    `created_at`, the run's own: the attachment came with it)."""
    return [
        msgspec.to_builtins(
            file_artifact(
                item["attachment_id"], created_at, item["name"], item["content_type"], item["size"]
            )
        )
        if item.get("type") == _EARLIER_ATTACHMENT
        else item
        for item in stored
    ]


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
    worker_host: str | None = None
    debug_session: str | None = None
    debug_runner_uid: str | None = None
    work_item_id: str | None = None

    @classmethod
    def from_row(cls, row: Row[Any]) -> RunRecord:
        """A row of `select(tables.runs)`; its JSON columns become their Structs."""
        stored = row.artifacts
        if stored and any(item.get("type") == _EARLIER_ATTACHMENT for item in stored):
            values = {str(name): value for name, value in row._mapping.items()}  # plain str keys
            values["artifacts"] = _official_artifacts(stored, row.created_at)
            return msgspec.convert(values, cls)
        return msgspec.convert(row, cls, from_attributes=True)


ReplyState = Literal["pending", "delivered", "failed"]


class RunReply(Struct, kw_only=True):
    """The run's message where its work came from (docs/providers.md#replies)."""

    target: Annotated[
        ReplyTarget, Meta(description="the issue, pull request, merge request or thread")
    ]
    state: Annotated[
        ReplyState,
        Meta(description="pending (being sent, or waiting to be retried), delivered, failed"),
    ]
    attempts: Annotated[int, Meta(description="calls to the provider's API so far")]
    last_error: Annotated[str | None, Meta(description="the provider's words, when it refused")]
    link: Annotated[str | None, Meta(description="the message at the provider")]


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
    work_item_id: (
        Annotated[
            str,
            Meta(
                description="the work item a provider event's run belongs to "
                "(GET /factory/{uid}/work-items/{id})"
            ),
        ]
        | UnsetType
    ) = UNSET
    replies: (
        Annotated[
            list[RunReply],
            Meta(description="runs a provider event started: what they post back there"),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def of(
        cls, run: RunRecord, creator: Creator | None = None, replies: list[RunReply] | None = None
    ) -> RunItem:
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
            agent_config=UNSET if run.agent_config is None else run.agent_config.answered(),
            creator=known(creator),
            metadata=known(run.metadata),
            status_message=known(run.status_message)
            if run.state != "QUEUED" or run.worker_host is None
            else StatusMessage(waiting_message(run.worker_host), WAITING_FOR_WORKER, True),
            artifacts=known(run.artifacts),
            work_item_id=known(run.work_item_id),
            replies=replies or UNSET,
        )


def known(value: T | None) -> T | UnsetType:
    """A value for an optional field that is absent when unknown."""
    return UNSET if value is None else value


class TimelineEvent(Struct, kw_only=True):
    state: str
    at: Timestamp
    runner_uid: str | None
    reason: str | None


class Timeline(Struct):
    run_id: str
    events: Annotated[list[TimelineEvent], Meta(description="oldest first; QUEUED at creation")]
