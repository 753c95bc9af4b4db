"""The messages of the runner protocol as this runner sends and reads them (the server's side is
gateway.platform.runners.routes). Plain JSON objects, described for the type checker only: the
runner uses the standard library alone, and passes what it is sent on as it came."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Outcome = Literal["SUCCEEDED", "FAILED", "CANCELLED"]


class Registered(TypedDict):
    """The answer of POST /runner/register."""

    runner_uid: str
    team_uid: str
    lease_s: float


class AttachmentFile(TypedDict):
    """An attachment of the run with content, fetched from its signed URL. `path`: where the
    runner put it (added by the runner, for the command)."""

    attachment_id: str
    name: str | None
    content_type: str | None
    size: int | None
    download_url: str
    expires_at: str
    path: NotRequired[str]


class RunMessage(TypedDict):
    """A follow-up a user sent to the run; written as it came to RUN_MESSAGES (its files with
    the `path` the runner downloaded each to)."""

    id: str
    message: str
    attachments: list[str]
    files: NotRequired[list[AttachmentFile]]
    mode: str | None
    routing: str
    created_at: str


class CheckoutCredential(TypedDict):
    """What to clone the run's repository with (its provider connection's, for it alone)."""

    provider: str
    repository: str  # owner/name
    token: str
    expires_at: str | None
    connection_uid: str


class ClaimedRun(TypedDict):
    run_id: str
    title: str | None
    prompt: str
    state: str
    attempt: int
    lease_expires_at: str
    conversation_id: str
    factory_uid: str | None
    source: str
    metadata: dict[str, str] | None
    agent_config: dict[str, object] | None
    event_payload: bool  # a webhook run: its payload can be fetched
    mode: str
    messages: list[RunMessage]
    attachments: NotRequired[list[AttachmentFile]]
    secrets: NotRequired[dict[str, str]]  # the values of its managed secrets, by name
    checkout_credential: NotRequired[CheckoutCredential | None]
    session: NotRequired[str]


class Heartbeat(TypedDict):
    """The answer of POST /runner/runs/{run_id}/heartbeat."""

    run_id: str
    state: str
    lease_expires_at: str
    cancel_requested: bool
    interrupt_requested: bool
    messages: list[RunMessage]  # sent into the live session since the last heartbeat


class Ending(TypedDict):
    """How a run ended: one item of POST /runner/finish."""

    run_id: str
    outcome: Outcome
    transcript: NotRequired[str]
    status_message: NotRequired[str]
    error_code: NotRequired[str]


class ItemProblem(TypedDict):
    status: int
    code: str
    detail: str


class FinishedRun(TypedDict):
    """The outcome of one ending: `ok`, or not finished and `problem` says why."""

    run_id: str
    ok: bool
    state: str | None
    status_message: dict[str, object] | None
    session_link: str | None
    problem: ItemProblem | None


class FinishedAndClaimed(TypedDict):
    """The answer of POST /runner/finish: one outcome per ending, in order, and the runs
    claimed."""

    finished: list[FinishedRun]
    runs: list[ClaimedRun]


class FileArtifact(TypedDict):
    """A file the command left in RUN_OUTPUTS (POST /runner/runs/{run_id}/artifacts)."""

    artifact_type: Literal["FILE"]
    filename: str
    filepath: str
    mime_type: str
    content_base64: str
