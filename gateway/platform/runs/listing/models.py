"""GET /agent/runs: the filters a listing takes, and a page of runs."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from gateway.foundation.api.fields import Cursor, Limit, Moment, in_utc
from gateway.foundation.api.pagination import PageInfo
from gateway.platform.runs.record.models import RunItem
from gateway.platform.runs.record.states import RunState


class RunList(Struct):
    runs: list[RunItem]
    page_info: PageInfo


class RunFilters(Struct, kw_only=True):
    state: Annotated[list[RunState], Meta(description="any of these states")] = []
    name: Annotated[str, Meta(description="agent_config.name")] | None = None
    config_name: Annotated[str, Meta(description="alias of name (name wins)")] | None = None
    model_id: Annotated[str, Meta(description="agent_config.model_id")] | None = None
    creator: Annotated[str, Meta(description="creator uid or email (any case)")] | None = None
    source: Annotated[str, Meta(description="API or WEBHOOK (any case)")] | None = None
    q: Annotated[str, Meta(description="substring of title or prompt (any case)")] | None = None
    created_after: Moment | None = None
    created_before: Moment | None = None
    updated_after: Moment | None = None
    limit: Limit = 50
    cursor: Cursor | None = None
    sort_by: Literal["created_at", "updated_at"] = "updated_at"
    sort_order: Literal["asc", "desc"] = "desc"

    def __post_init__(self) -> None:
        self.created_after = in_utc(self.created_after, "created_after")
        self.created_before = in_utc(self.created_before, "created_before")
        self.updated_after = in_utc(self.updated_after, "updated_after")
