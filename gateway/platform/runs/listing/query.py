"""GET /agent/runs: the runs a caller may see, filtered, in keyset pages."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.platform.runs.listing.models import RunFilters
from gateway.platform.runs.record.models import RunRecord

r = t.runs


@dataclass(frozen=True, slots=True)
class RunQuery:
    states: tuple[str, ...] = ()
    name: str | None = None
    model_id: str | None = None
    creator: str | None = None
    source: str | None = None
    q: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    sort_by: str = "updated_at"
    sort_order: str = "desc"
    limit: int = 50
    after: tuple[datetime, str] | None = None  # keyset position (sort value, run_id)


def run_query(filters: RunFilters, after: tuple[datetime, str] | None) -> RunQuery:
    """The query of a listing's filters, after the keyset position `after`."""
    return RunQuery(
        states=tuple(filters.state),
        name=filters.name or filters.config_name or None,
        model_id=filters.model_id or None,
        creator=filters.creator or None,
        source=filters.source or None,
        q=filters.q or None,
        created_after=filters.created_after,
        created_before=filters.created_before,
        updated_after=filters.updated_after,
        sort_by=filters.sort_by,
        sort_order=filters.sort_order,
        limit=filters.limit,
        after=after,
    )


async def list_runs(
    conn: AsyncConnection, principal: Principal, query: RunQuery
) -> tuple[list[RunRecord], bool]:
    """Visible runs in the requested order; returns (page, has_more)."""
    visible = or_(r.c.creator_uid == principal.uid, r.c.team_uid.in_(sorted(principal.team_uids)))
    statement = select(r).where(visible, *_filters(query))
    column = r.c[query.sort_by]
    if query.after is not None:
        value, run_id = query.after
        beyond = column < value if query.sort_order == "desc" else column > value
        tie = r.c.run_id < run_id if query.sort_order == "desc" else r.c.run_id > run_id
        statement = statement.where(or_(beyond, and_(column == value, tie)))
    order = (
        (column.desc(), r.c.run_id.desc()) if query.sort_order == "desc" else (column, r.c.run_id)
    )
    rows = (await conn.execute(statement.order_by(*order).limit(query.limit + 1))).all()
    return [RunRecord.from_row(row) for row in rows[: query.limit]], len(rows) > query.limit


def _filters(query: RunQuery) -> list[Any]:
    found: list[Any] = []
    if query.states:
        found.append(r.c.state.in_(query.states))
    if query.name is not None:
        found.append(r.c.agent_config["name"].as_string() == query.name)
    if query.model_id is not None:
        found.append(r.c.agent_config["model_id"].as_string() == query.model_id)
    if query.creator is not None:
        by_email = select(t.users.c.uid).where(func.lower(t.users.c.email) == query.creator.lower())
        found.append(or_(r.c.creator_uid == query.creator, r.c.creator_uid.in_(by_email)))
    if query.source is not None:
        found.append(r.c.source == query.source.upper())
    if query.q:
        needle = f"%{_escape_like(query.q.lower())}%"
        found.append(
            or_(
                func.lower(func.coalesce(r.c.title, "")).like(needle, escape="\\"),
                func.lower(r.c.prompt).like(needle, escape="\\"),
            )
        )
    if query.created_after is not None:
        found.append(r.c.created_at > query.created_after)
    if query.created_before is not None:
        found.append(r.c.created_at < query.created_before)
    if query.updated_after is not None:
        found.append(r.c.updated_at > query.updated_after)
    return found


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
