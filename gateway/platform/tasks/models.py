"""The shapes of factory tasks: what a caller asks for, the task as every reader sees it, and
what a new task takes from the run whose conversation it is bound to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, TypedDict

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Cursor, Limit, Moment, Timestamp, in_utc, unless_none
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.store.rows import from_row
from gateway.platform.runs.record.models import Creator, RunRecord
from gateway.platform.runs.record.models import RunItem as Run

TaskStage = Literal["TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED"]
TicketSource = Literal["repository_issue", "issue_key", "reference"]
Title = Annotated[str, Meta(min_length=1, max_length=500, pattern=r"\S")]
Description = Annotated[str, Meta(max_length=100_000)]
FULL_FORM = "full form only (GET one, or a list with full_list)"


class TaskCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    title: Title
    conversation_id: Annotated[str, Meta(min_length=1, max_length=64, pattern=r"\S")]
    stage: Annotated[TaskStage, Meta(description="TRIAGE when absent or null")] | None = None


class TaskPatch(Struct, kw_only=True, forbid_unknown_fields=True):
    """At least one field."""

    title: Title | UnsetType = UNSET
    description: Description | UnsetType | None = UNSET
    stage: TaskStage | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.title is UNSET and self.description is UNSET and self.stage is UNSET:
            raise ValueError("body: expected at least one of title, description, stage")


class TaskOutput(Struct):
    id: str
    kind: Annotated[str, Meta(description="for example pull_request")]
    title: str | None
    url: str | None
    created_at: Timestamp

    @classmethod
    def from_row(cls, row: Row[Any]) -> TaskOutput:
        return from_row(cls, row)


class Task(Struct, kw_only=True):
    """created_by is omitted when the creator is unknown."""

    uid: str
    factory_uid: str
    title: str
    description: str | None
    stage: TaskStage
    conversation_id: str
    created_at: Timestamp
    updated_at: Timestamp
    created_by: Creator | UnsetType = UNSET
    ticket_source: Annotated[TicketSource | None, Meta(description=FULL_FORM)] | UnsetType = UNSET
    ticket_id: (
        Annotated[str | None, Meta(description=f"{FULL_FORM}; issue keys upper-cased")] | UnsetType
    ) = UNSET
    outputs: (
        Annotated[list[TaskOutput], Meta(description=f"{FULL_FORM}: derived, newest first")]
        | UnsetType
    ) = UNSET
    current_run: (
        Annotated[
            Run | None,
            Meta(
                description="with include_current_run (and from cancel): the conversation's "
                "newest top-level run"
            ),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def from_row(
        cls, row: Row[Any], created_by: Creator | None, outputs: list[TaskOutput] | None
    ) -> Task:
        """The full form with `outputs` (and the ticket), the lean one of a listing without."""
        full = outputs is not None
        return from_row(
            cls,
            row,
            created_by=unless_none(created_by),
            ticket_source=row.ticket_source if full else UNSET,
            ticket_id=row.ticket_id if full else UNSET,
            outputs=unless_none(outputs),
            current_run=UNSET,
        )


class TaskList(Struct):
    tasks: list[Task]
    page_info: PageInfo


class TaskFilters(Struct, kw_only=True):
    stage: Annotated[list[TaskStage], Meta(description="any of these stages")] = []
    created_by: Annotated[list[str], Meta(description="creator emails (any case)")] = []
    q: Annotated[str, Meta(description="substring of the title (any case)")] | None = None
    created_after: Moment | None = None
    created_before: Moment | None = None
    updated_after: Moment | None = None
    sort_by: Literal["created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    limit: Limit = 50
    cursor: Cursor | None = None
    full_list: Annotated[bool, Meta(description="add ticket_source, ticket_id and outputs")] = False
    include_current_run: Annotated[bool, Meta(description="add current_run")] = False

    def __post_init__(self) -> None:
        self.created_after = in_utc(self.created_after, "created_after")
        self.created_before = in_utc(self.created_before, "created_before")
        self.updated_after = in_utc(self.updated_after, "updated_after")


class ByConversation(Struct, kw_only=True):
    conversation_id: Annotated[str, Meta(min_length=1)]


class ByRun(Struct, kw_only=True):
    run_id: Annotated[str, Meta(min_length=1, description="any run of the task's run tree")]


@dataclass(frozen=True, slots=True)
class TaskRef:
    """A live task bound to a conversation."""

    uid: str
    factory_uid: str


@dataclass(frozen=True, slots=True)
class TaskSeed:
    """What a new task takes from the top-level run of its conversation."""

    conversation_id: str
    creator_uid: str | None
    ticket_ref: str | None

    @classmethod
    def of_run(cls, run: Row[Any] | RunRecord) -> TaskSeed:
        return cls(run.conversation_id, run.creator_uid, run.ticket_ref)


class TaskValues(TypedDict):
    """The row of a new task."""

    uid: str
    factory_uid: str
    title: str
    stage: str
    conversation_id: str
    created_by_uid: str | None
    ticket_source: TicketSource | None
    ticket_id: str | None
    created_at: datetime
    updated_at: datetime
