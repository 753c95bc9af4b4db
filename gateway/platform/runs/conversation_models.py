"""The shapes of conversations: follow-ups, interrupts and prepared attachments (addressed by run
or by conversation), what runs said (normalized messages), the skills agents offer, and the
handoff snapshot and shared-session lookups."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.api.fields import Timestamp
from gateway.platform.runs.models import RunState

AttachmentId = Annotated[str, Meta(min_length=1, max_length=64)]
Routing = Literal["queued", "injected", "resumed", "debug"]


class FollowUp(Struct, kw_only=True, forbid_unknown_fields=True):
    message: Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")]
    attachments: (
        Annotated[
            list[AttachmentId],
            Meta(max_length=20, description="attachment ids prepared for the run that receives it"),
        ]
        | None
    ) = None
    mode: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] | None = None


class FollowUpResult(Struct):
    run_id: str
    state: RunState
    routing: Routing


class InterruptResult(Struct):
    run_id: str
    state: RunState
    interrupted: Annotated[bool, Meta(description="always true")]


class FileSpec(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=300)] | None = None


class AttachmentsPrepare(Struct, kw_only=True, forbid_unknown_fields=True):
    files: (
        Annotated[
            list[FileSpec],
            Meta(min_length=1, max_length=20, description="absent: one attachment without a name"),
        ]
        | None
    ) = None

    def names(self) -> list[str | None]:
        return [None] if self.files is None else [file.name for file in self.files]


class PreparedAttachment(Struct):
    attachment_id: str
    name: str | None


class PreparedAttachments(Struct):
    attachments: list[PreparedAttachment]
    run_id: Annotated[str, Meta(description="the run the ids are valid for")]
    conversation_id: str


class Message(Struct, kw_only=True):
    id: str
    run_id: str
    role: Literal["user", "agent", "tool", "system"]
    kind: Annotated[
        Literal["prompt", "follow_up", "message"],
        Meta(description="the run's prompt, a user's follow-up, or what the runner reported"),
    ]
    text: str
    mode: str | None
    routing: Annotated[str | None, Meta(description="follow-ups: queued, resumed, injected")]
    attachments: list[str]
    created_at: Timestamp


class RunConversation(Struct, kw_only=True):
    run_id: str
    conversation_id: str
    messages: list[Message]


class Conversation(Struct, kw_only=True):
    conversation_id: str
    run_ids: Annotated[list[str], Meta(description="its runs you can see, oldest first")]
    messages: list[Message]


class Reference(Struct, kw_only=True, forbid_unknown_fields=True):
    url: Annotated[str, Meta(min_length=1, max_length=2000, description="a ticket or PR URL")]


class Skill(Struct, kw_only=True):
    skill_spec: str
    name: str
    repository: str
    agent_uids: Annotated[list[str], Meta(description="the agents that offer it")]


class Skills(Struct):
    skills: list[Skill]


class HandoffAttachment(Struct):
    attachment_id: Annotated[str, Meta(description="the artifact uid of the file")]
    download_url: Annotated[str, Meta(description="signed, valid for 5 minutes")]
    filename: str
    mime_type: str | None


class HandoffAttachments(Struct):
    attachments: Annotated[
        list[HandoffAttachment],
        Meta(description="files of the latest ended execution; empty when none ended"),
    ]


class SessionRedirect(Struct, kw_only=True):
    conversation_id: str | UnsetType = UNSET


class ConversationRedirect(Struct, kw_only=True):
    session_id: str | UnsetType = UNSET
