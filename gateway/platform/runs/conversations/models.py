"""The shapes of conversations: follow-ups and interrupts (addressed by run or by
conversation), and what runs said (normalized messages)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from gateway.foundation.api.fields import Timestamp
from gateway.platform.runs.record.states import RunState

AttachmentId = Annotated[str, Meta(min_length=1, max_length=64)]
Routing = Literal["queued", "injected", "resumed", "debug"]
# follow-ups a user sent to the run that its runner is handed (not the runner's own messages,
# nor interrupts, nor those to a debug session)
FOLLOW_UPS: tuple[Routing, ...] = ("queued", "resumed", "injected")


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


SkillId = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9._-]*$")]


class SkillInput(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    skill_path: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=1000,
                description="the path the skill was resolved by (proves no ownership)",
            ),
        ]
        | None
    ) = None
    bundled_skill_id: (
        Annotated[SkillId, Meta(description="a bundled reference the service provides")] | None
    ) = None


class Action(Struct, kw_only=True, forbid_unknown_fields=True):
    """What the agent did, as its runner reported it (spec 2.3: skill loads are `read_skill`)."""

    type: Literal["read_skill"]
    input: SkillInput


class Message(Struct, kw_only=True):
    id: str
    run_id: str
    role: Literal["user", "agent", "tool", "system"]
    kind: Annotated[
        Literal["prompt", "follow_up", "message", "action"],
        Meta(
            description="the run's prompt, a user's follow-up, what the runner reported, or an "
            "action the agent took (`action`)"
        ),
    ]
    text: str
    mode: str | None
    routing: Annotated[str | None, Meta(description="follow-ups: queued, resumed, injected")]
    attachments: list[str]
    created_at: Timestamp
    action: Action | UnsetType = UNSET


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
