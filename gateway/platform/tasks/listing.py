"""GET /factory/{uid}/tasks: filters, keyset pagination over the chosen sort."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.tasks.models import Task
from gateway.platform.tasks.tasks import task_views

tk = t.tasks


@dataclass(frozen=True, slots=True)
class TaskQuery:
    stages: tuple[str, ...] = ()
    created_by: tuple[str, ...] = ()  # teammate emails
    q: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    sort_by: str = "created_at"
    sort_order: str = "desc"
    limit: int = 50
    after: tuple[datetime, str] | None = None  # keyset position (sort value, task uid)
    full: bool = False  # with the ticket and the outputs
    current_run: bool = False  # with the conversation's newest top-level run


async def list_tasks(
    conn: AsyncConnection, factory_uid: str, query: TaskQuery
) -> tuple[list[Task], bool]:
    """Live tasks of the factory; returns (page, has_more)."""
    statement = select(tk).where(
        tk.c.factory_uid == factory_uid, tk.c.deleted_at.is_(None), *_filters(query)
    )
    column = tk.c[query.sort_by]
    desc = query.sort_order == "desc"
    if query.after is not None:
        value, uid = query.after
        beyond = column < value if desc else column > value
        tie = tk.c.uid < uid if desc else tk.c.uid > uid
        statement = statement.where(or_(beyond, and_(column == value, tie)))
    order = (column.desc(), tk.c.uid.desc()) if desc else (column, tk.c.uid)
    rows = (await conn.execute(statement.order_by(*order).limit(query.limit + 1))).all()
    page = rows[: query.limit]
    tasks = await task_views(conn, page, full=query.full, current_run=query.current_run)
    return tasks, len(rows) > query.limit


def _filters(query: TaskQuery) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if query.stages:
        found.append(tk.c.stage.in_(query.stages))
    if query.created_by:
        emails = [email.lower() for email in query.created_by]
        by_email = select(t.users.c.uid).where(func.lower(t.users.c.email).in_(emails))
        found.append(tk.c.created_by_uid.in_(by_email))
    if query.q:
        escaped = query.q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found.append(func.lower(tk.c.title).like(f"%{escaped}%", escape="\\"))
    if query.created_after is not None:
        found.append(tk.c.created_at > query.created_after)
    if query.created_before is not None:
        found.append(tk.c.created_at < query.created_before)
    if query.updated_after is not None:
        found.append(tk.c.updated_at > query.updated_after)
    return found
