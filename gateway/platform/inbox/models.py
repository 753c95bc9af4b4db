"""The shapes of the factory inbox: its listing, a notification as a reader sees it, and the
marking of notifications read or unread."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Cursor, Limit, Timestamp
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.store.rows import from_row

Kind = Literal[
    "run_failed",
    "run_needs_input",
    "task_stage_changed",
    "dispatch_failed",
    "reply_failed",
    "subscription_disabled",
]
Scope = Literal["mine", "team"]
NotificationUid = Annotated[str, Meta(min_length=1, max_length=64)]
MarkError = Literal["forbidden", "not_recipient", "not_active"]


class Notification(Struct, kw_only=True):
    uid: str
    factory_uid: str
    kind: Kind
    title: str
    detail: str | None
    run_id: Annotated[str | None, Meta(description="the run it is about")]
    task_uid: Annotated[str | None, Meta(description="the task it is about")]
    created_at: Timestamp
    is_read: (
        Annotated[bool, Meta(description="the caller's read state: `mine` scope only")] | UnsetType
    ) = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], scope: Scope) -> Notification:
        """Read state is the caller's own: other scopes than `mine` omit it (spec 2.7)."""
        return from_row(cls, row, is_read=row.read_at is not None if scope == "mine" else UNSET)


class InboxList(Struct):
    notifications: list[Notification]
    page_info: PageInfo


class InboxFilter(Struct, kw_only=True):
    scope: Annotated[
        Scope,
        Meta(description="mine (user credentials): yours; team: every live recipient's"),
    ] = "mine"
    factory_uid: Annotated[str, Meta(description="only this factory's (if authorized)")] | None = (
        None
    )
    recipient_uid: (
        Annotated[str, Meta(description="a user uid; in `mine` it can only match the caller")]
        | None
    ) = None
    limit: Limit = 50
    cursor: Cursor | None = None


class InboxMutation(Struct, kw_only=True, forbid_unknown_fields=True):
    notification_uids: Annotated[list[NotificationUid], Meta(min_length=1, max_length=100)]


class MutationOutcome(Struct):
    notification_uid: str
    success: bool
    error: Annotated[
        MarkError | None,
        Meta(description="why it was not changed; null on success (a missing one is a no-op)"),
    ]


class InboxMutationResult(Struct):
    results: Annotated[list[MutationOutcome], Meta(description="one per uid, in request order")]
