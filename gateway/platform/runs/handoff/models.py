"""The shapes of a run's handoff snapshot and of the shared-session lookups."""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType


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
