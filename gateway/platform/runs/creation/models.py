"""POST /agent/runs (and /agent/run): the official clients' body of a new run, and the answer."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from gateway.platform.runs.attachments.models import FileAttachment, ImageAttachment
from gateway.platform.runs.record.models import MAX_PROMPT, AgentConfig
from gateway.platform.runs.record.states import RunState

ONE_OF = "give at most one of parent_run_id and conversation_id"


MetadataKey = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")]
MetadataValue = Annotated[str, Meta(max_length=256)]
Mode = Literal["normal", "plan", "orchestrate"]


class RunCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """POST /agent/runs (and /agent/run, the TypeScript client's path): the official clients'
    body. `prompt` may be left out when a skill names the work or `conversation_id` continues a
    conversation (a handoff)."""

    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT, pattern=r"\S")] | None = None
    title: Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")] | None = None
    config: AgentConfig | None = None
    skill: (
        Annotated[
            str,
            Meta(
                max_length=500,
                description="owner/repo:skill (or repo:skill, the repository of an environment "
                "you may use); wins over config.skill_spec",
            ),
        ]
        | None
    ) = None
    mode: Mode | None = None
    metadata: Annotated[dict[MetadataKey, MetadataValue], Meta(max_length=20)] | None = None
    attachments: (
        Annotated[list[FileAttachment], Meta(max_length=5, description="files for the agent")]
        | None
    ) = None
    images: (
        Annotated[list[ImageAttachment], Meta(max_length=5, description="images for the agent")]
        | None
    ) = None
    team: Annotated[bool, Meta(description="runs here are team-owned: omit it, or true")] | None = (
        None
    )
    agent_identity_uid: (
        Annotated[str, Meta(max_length=64, description="an agent of the run's team executes it")]
        | None
    ) = None
    interactive: (
        Annotated[bool, Meta(description="accepted; every run here takes follow-ups")] | None
    ) = None
    on_behalf_of: (
        Annotated[str, Meta(max_length=320, description="refused: no agent may act for a user")]
        | None
    ) = None
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
