"""The shapes of work items as the API answers them (docs/api.md, "Work items")."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from gateway.foundation.api.fields import Cursor, Limit, Timestamp
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.events.catalogue import WorkItemSource

# the stages of factory_format's WORK_ITEM_STAGES (a test keeps them equal)
WorkItemStage = Literal[
    "TRIAGE", "BACKLOG", "TODO", "IN_PROGRESS", "IN_REVIEW", "DONE", "CANCELLED"
]


class WorkItem(Struct, kw_only=True):
    id: str
    source: WorkItemSource
    stage: WorkItemStage
    run_ids: Annotated[list[str], Meta(description="its runs, oldest first")]
    followup_count: Annotated[int, Meta(description="later deliveries that continued it")]
    created_at: Timestamp
    updated_at: Timestamp


class WorkItemList(Struct):
    work_items: list[WorkItem]
    page_info: PageInfo


class WorkItemFilters(Struct, kw_only=True):
    stage: Annotated[list[WorkItemStage], Meta(description="any of these stages")] = []
    limit: Limit = 50
    cursor: Cursor | None = None
