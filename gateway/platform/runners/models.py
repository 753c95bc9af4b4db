"""The shapes of the runner protocol (docs/runs-and-tasks.md, "Runners"): what runners send and
are answered, the artifacts they store, and what users read of runners and usage."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Timestamp
from gateway.kernel.errors import InvalidRequest, ServiceError
from gateway.platform.runs.attachments.models import AttachmentFile
from gateway.platform.runs.conversations.models import Action
from gateway.platform.runs.outputs.models import NewArtifact, PrState
from gateway.platform.runs.record.models import AgentConfig, RunRecord, StatusMessage
from gateway.platform.runs.record.states import RunState

Uid = Annotated[str, Meta(min_length=1, max_length=64)]
Text = Annotated[str, Meta(max_length=100_000)]
MAX_WAIT_S = 30.0
MAX_CLAIM = 50  # runs per claim call: a runner of many short runs takes them in batches
MAX_FINISH = 50  # runs per finish call
MAX_FILE_BYTES = 512 * 1024  # decoded; the 1 MB API body cap holds its base64 and the rest
Outcome = Literal["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]


# --- registering and claiming ------------------------------------------------------------------


class RunnerRegister(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=200)]
    host: Annotated[str, Meta(max_length=200)] | None = None
    factory_uid: Annotated[Uid | None, Meta(description="claim only this factory's runs")] = None
    concurrency: Annotated[int, Meta(ge=1, le=1000)] = 1
    version: Annotated[str, Meta(max_length=64)] | None = None
    worker_id: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=200,
                pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$",
                description="a self-hosted worker's stable id: it claims only the runs whose "
                "config.worker_host names it (not 'warp', the pool's name); absent: a runner of "
                "the team's pool",
            ),
        ]
        | None
    ) = None
    debug_sessions: Annotated[
        bool, Meta(description="it opens debug sessions of the setup failures it reported")
    ] = False


class RunnerRegistered(Struct):
    runner_uid: str
    team_uid: str
    lease_s: Annotated[float, Meta(description="renew a claimed run's lease within this")]


class ClaimRequest(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    max_runs: Annotated[int, Meta(ge=1, le=MAX_CLAIM)] = 1
    wait_s: Annotated[
        float, Meta(ge=0, le=MAX_WAIT_S, description="long-poll: wait this long for a run")
    ] = 20.0


class RunMessage(Struct, kw_only=True):
    id: str
    message: str
    attachments: Annotated[list[str], Meta(description="attachment ids prepared for the run")]
    files: Annotated[
        list[AttachmentFile], Meta(description="those attachments, each with a download URL")
    ] = []
    mode: str | None
    routing: Annotated[
        str,
        Meta(
            description="queued (sent before the run started), resumed (it started this "
            "execution of an ended run), injected (sent into the live session)"
        ),
    ]
    created_at: Timestamp


class CheckoutCredential(Struct, kw_only=True):
    """What to clone the run's repository with: the credential of the provider connection that
    started the run, for that repository alone (docs/runners.md#a-working-copy)."""

    provider: Literal["github", "gitlab"]
    repository: Annotated[str, Meta(description="owner/name (a GitLab project's full path)")]
    token: Annotated[
        str,
        Meta(
            description="a GitHub App's installation token for this repository's contents "
            "alone, or the connection's api_token; git sends it as HTTP basic authentication "
            "(x-access-token, oauth2)"
        ),
    ]
    expires_at: Annotated[
        Timestamp | None, Meta(description="when the token lapses; null: the connection's own")
    ]
    connection_uid: str


class ClaimedRun(Struct, kw_only=True):
    run_id: str
    title: str | None
    prompt: str
    state: str
    attempt: Annotated[int, Meta(description="1 for the first claim of the run")]
    lease_expires_at: Timestamp
    conversation_id: str
    factory_uid: str | None
    source: str
    metadata: dict[str, str] | None
    agent_config: AgentConfig | None
    event_payload: Annotated[
        bool, Meta(description="a webhook run: its event-payload.json can be fetched")
    ]
    mode: Annotated[
        str,
        Meta(
            description="this execution's mode: the newest queued or resuming follow-up's, "
            "else the run's own (a scheduled agent's), else normal"
        ),
    ]
    messages: Annotated[
        list[RunMessage], Meta(description="the follow-ups users sent to the run, oldest first")
    ]
    session: Annotated[
        Literal["run", "debug"],
        Meta(
            description="debug: a debug session of the FAILED run in the runner's retained "
            "session (its messages are the debug follow-ups); finishing it leaves the run FAILED"
        ),
    ] = "run"
    attachments: Annotated[
        list[AttachmentFile],
        Meta(
            description="every attachment of the run with content (the files it was created "
            "with, a webhook run's event-payload.json, uploaded follow-up files), oldest first, "
            "each with a download URL"
        ),
    ] = []
    secrets: Annotated[
        dict[str, str],
        Meta(
            description="the values of the run's managed secrets (agent_config.secrets, and "
            "the harness's key: agent_config.harness.auth.secret_name) by name: told only to "
            "the runner holding the claim, never in any other answer; a name the team has no "
            "secret of is left out"
        ),
    ] = {}
    checkout_credential: Annotated[
        CheckoutCredential | None,
        Meta(
            description="a run a GitHub or GitLab connection with credentials started: what to "
            "clone its repository with, preferred over the runner's own token; told only to "
            "the runner holding the claim, never in any other answer"
        ),
    ] = None


class Claimed(Struct):
    runs: Annotated[list[ClaimedRun], Meta(description="empty when none came within wait_s")]


# --- holding a run -----------------------------------------------------------------------------


class Held(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid


class HeartbeatResult(Struct, kw_only=True):
    run_id: str
    state: str
    lease_expires_at: Timestamp
    cancel_requested: Annotated[bool, Meta(description="stop the run, then finish CANCELLED")]
    interrupt_requested: Annotated[bool, Meta(description="interrupt the current turn")]
    messages: Annotated[
        list[RunMessage],
        Meta(description="follow-ups sent into the live session since the last heartbeat"),
    ]


class Progress(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    state: Annotated[
        Literal["PENDING", "INPROGRESS", "BLOCKED"] | None,
        Meta(description="PENDING: accepted but not started (waiting for a sandbox, say)"),
    ] = None
    status_message: Annotated[str, Meta(max_length=10_000)] | None = None
    session_id: Annotated[str, Meta(max_length=64)] | None = None
    session_link: Annotated[str, Meta(max_length=500, pattern=r"^https?://")] | None = None


class RunStatus(Struct, kw_only=True):
    """A held run as its runner left it (progress, finish, release)."""

    run_id: str
    state: RunState
    status_message: StatusMessage | None
    session_link: str | None

    @classmethod
    def of(cls, run: RunRecord) -> RunStatus:
        return cls(
            run_id=run.run_id,
            state=run.state,
            status_message=run.status_message,
            session_link=run.session_link,
        )


class ReportedMessage(Struct, forbid_unknown_fields=True):
    role: Literal["agent", "user", "tool", "system"]
    text: Text = ""
    action: Annotated[
        Action | None,
        Meta(
            description='what the agent did: {"type": "read_skill", "input": {"skill_path" '
            'and/or "bundled_skill_id"}}'
        ),
    ] = None


class Messages(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    messages: Annotated[list[ReportedMessage], Meta(min_length=1, max_length=100)]


class Appended(Struct):
    appended: int


class ArtifactUpload(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    artifact_type: Literal["FILE", "PULL_REQUEST"]
    # FILE
    filename: Annotated[str, Meta(min_length=1, max_length=300)] | None = None
    filepath: Annotated[str, Meta(max_length=1000)] | None = None
    mime_type: Annotated[str, Meta(min_length=1, max_length=100)] = "application/octet-stream"
    content_base64: Annotated[str, Meta(description="FILE: at most 512 KiB decoded")] | None = None
    description: Annotated[str, Meta(max_length=2000)] | None = None
    title: Annotated[str, Meta(max_length=500)] | None = None
    # PULL_REQUEST
    url: Annotated[str, Meta(max_length=2000, pattern=r"^https?://")] | None = None
    branch: Annotated[str, Meta(max_length=300)] | None = None
    state: PrState | None = None

    def stored(self) -> NewArtifact:
        """What is stored of it; a 400 naming the field that a FILE or PULL_REQUEST lacks."""
        if self.artifact_type == "PULL_REQUEST":
            if self.url is None:
                raise InvalidRequest("url: required for a PULL_REQUEST artifact")
            return NewArtifact(
                artifact_type="PULL_REQUEST",
                url=self.url,
                branch=self.branch,
                title=self.title,
                pr_state=self.state,
                description=self.description,
            )
        if self.filename is None or self.content_base64 is None:
            field = "filename" if self.filename is None else "content_base64"
            raise InvalidRequest(f"{field}: required for a FILE artifact")
        try:
            content = base64.b64decode(self.content_base64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest("content_base64: not valid base64") from exc
        if len(content) > MAX_FILE_BYTES:
            raise InvalidRequest(f"content_base64: more than {MAX_FILE_BYTES} bytes decoded")
        return NewArtifact(
            artifact_type="FILE",
            filename=self.filename,
            filepath=self.filepath,
            mime_type=self.mime_type,
            size=len(content),
            content=content,
            description=self.description,
            title=self.title,
        )


class ArtifactAdded(Struct):
    artifact_uid: str
    artifact_type: str


Tokens = Annotated[int, Meta(ge=0, le=10**12)]


class Usage(Struct, kw_only=True, forbid_unknown_fields=True):
    """A cumulative snapshot of the current execution's usage of one model: it replaces the
    previous one of that model; a figure left out is unavailable, not 0."""

    runner_uid: Uid
    model_id: Annotated[str, Meta(max_length=200)] | None = None
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    cost_usd: (
        Annotated[
            dict[Annotated[str, Meta(min_length=1, max_length=64)], Annotated[float, Meta(ge=0)]],
            Meta(description='dollars per cost component, e.g. {"llm": 0.42, "compute": 0.03}'),
        ]
        | None
    ) = None


class Reported(Struct):
    run_id: str
    reported: bool


class UsageDimensions(Struct, kw_only=True):
    """What factory metrics group and window spend by, copied from the run into each of its
    usage rows (none of it changes after creation): spend queries read run_usage alone
    (docs/metrics.md)."""

    factory_uid: str | None
    run_created_at: datetime
    root_run_id: str
    source: str
    user_uid: str | None
    agent_uid: str | None

    @classmethod
    def of(cls, run: RunRecord) -> UsageDimensions:
        return cls(
            factory_uid=run.factory_uid,
            run_created_at=run.created_at,
            root_run_id=run.root_run_id,
            source=run.source,
            user_uid=run.creator_uid if run.creator_kind == "user" else None,
            agent_uid=run.agent_uid,
        )


# --- finishing ---------------------------------------------------------------------------------


class RunEnding(Struct, kw_only=True, forbid_unknown_fields=True):
    """How a run ended, as a runner reports it: one finish or one item of a batch finish."""

    outcome: Outcome
    status_message: Annotated[str, Meta(max_length=10_000)] | None = None
    error_code: Annotated[str, Meta(max_length=64, pattern=r"^[a-z0-9_]+$")] | None = None
    transcript: (
        Annotated[str, Meta(max_length=900_000, description="stdout and stderr, as text")] | None
    ) = None


class Finish(RunEnding, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid


class FinishItem(RunEnding, kw_only=True, forbid_unknown_fields=True):
    run_id: Uid


class FinishMany(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    runs: Annotated[
        list[FinishItem],
        Meta(max_length=MAX_FINISH, description="the runs to finish, in order"),
    ] = []
    claim: Annotated[int, Meta(ge=0, le=MAX_CLAIM, description="then claim up to this many")] = 0
    wait_s: Annotated[
        float, Meta(ge=0, le=MAX_WAIT_S, description="long-poll for the claim, as /runner/claim")
    ] = 0.0


class ItemProblem(Struct, kw_only=True):
    status: int
    code: str
    detail: str


class FinishedRun(Struct, kw_only=True):
    """A finished run's state (as RunStatus), or the `problem` that kept it from finishing."""

    run_id: str
    ok: Annotated[bool, Meta(description="false: not finished, `problem` says why")]
    state: RunState | UnsetType = UNSET
    status_message: StatusMessage | UnsetType | None = UNSET
    session_link: str | UnsetType | None = UNSET
    problem: ItemProblem | UnsetType = UNSET

    @classmethod
    def of(cls, run_id: str, result: RunRecord | ServiceError) -> FinishedRun:
        if isinstance(result, ServiceError):
            problem = ItemProblem(status=result.status, code=result.code, detail=result.detail)
            return cls(run_id=run_id, ok=False, problem=problem)
        return cls(
            run_id=run_id,
            ok=True,
            state=result.state,
            status_message=result.status_message,
            session_link=result.session_link,
        )


class FinishedMany(Struct):
    finished: Annotated[list[FinishedRun], Meta(description="one per run asked, in order")]
    runs: Annotated[list[ClaimedRun], Meta(description="the runs claimed (claim > 0)")]


class Release(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    reason: Annotated[str, Meta(max_length=500)] = "given back by its runner"


# --- what users read of runners and usage -------------------------------------------------------


Unavailable = Meta(description="null: no snapshot reported it (unavailable, not 0)")


class UsageLine(Struct, kw_only=True):
    model_id: str | None
    component: str
    input_tokens: Annotated[int | None, Unavailable]
    output_tokens: Annotated[int | None, Unavailable]
    cost_usd: Annotated[float | None, Unavailable]


class RunUsage(Struct, kw_only=True):
    """The latest cumulative snapshots, summed over the run's executions and models."""

    run_id: str
    input_tokens: Annotated[int | None, Unavailable]
    output_tokens: Annotated[int | None, Unavailable]
    cost_usd: Annotated[float | None, Unavailable]
    components: list[UsageLine]


class Worker(Struct, kw_only=True):
    uid: str
    name: str
    host: str | None
    agent_uid: str
    factory_uid: str | None
    concurrency: int
    version: str | None
    started_at: Timestamp
    last_seen_at: Timestamp
    online: Annotated[bool, Meta(description="seen within one lease (may be briefly stale)")]
    runs_held: int
    worker_id: Annotated[
        str | None, Meta(description="runs pin to it by config.worker_host; null: the pool")
    ] = None

    @classmethod
    def of(cls, row: Row[Any], *, online: bool, runs_held: int) -> Worker:
        """A row of tables.runners, with what its reader made of it."""
        values = {str(name): value for name, value in row._mapping.items()}  # plain str keys
        return msgspec.convert(values | {"online": online, "runs_held": runs_held}, cls)


class WaitedWorker(Struct, kw_only=True):
    worker_host: Annotated[str, Meta(description="a workerHost factory definitions name")]
    factory_uids: Annotated[list[str], Meta(description="the factories whose runs wait for it")]


class Workers(Struct):
    workers: list[Worker]
    waiting: Annotated[
        list[WaitedWorker],
        Meta(
            description="self-hosted workers factory definitions name (workerHost) that have "
            "not registered (no runner of that name seen within two leases)"
        ),
    ]


class RunContextRun(Struct, kw_only=True):
    """The run's own fields in RUN_CONTEXT."""

    run_id: str
    title: str | None
    prompt: Annotated[
        str, Meta(description="the run's prompt (an automation's, with its envelope)")
    ]
    source: str
    mode: str
    attempt: int
    conversation_id: str
    factory_uid: str | None
    metadata: dict[str, str] | None
    session: Literal["run", "debug"] = "run"


class RunContextSecret(Struct, kw_only=True):
    name: Annotated[str, Meta(description="the managed secret's name")]
    env: Annotated[str, Meta(description="the environment variable holding its value")]


class RunContext(Struct, kw_only=True):
    """What `gateway runner` writes to the file RUN_CONTEXT names (docs/runners.md): the run's
    fields and its whole resolved configuration; secret names and their variables, never
    their values."""

    version: Annotated[Literal[1], Meta(description="this document's version")]
    run: RunContextRun
    config: Annotated[
        AgentConfig | None,
        Meta(description="the run's resolved configuration, as its claim gave it"),
    ]
    secrets: list[RunContextSecret]
    skills_dir: Annotated[str, Meta(description="RUN_SKILLS")]
    mcp_config: Annotated[str, Meta(description="RUN_MCP_CONFIG")]
