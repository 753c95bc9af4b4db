"""Where a run's replies go: the work item it belongs to (docs/providers.md#work-items).

The evaluator stores a work item's reply target when its first event makes it
(`target_of`, as JSON in work_items.target); `run_work_item` gives a run's work item and that
target back, the one lookup replies need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.webhook_gateway.providers.work_items import Source
from gateway.webhook_gateway.replies.targets import (
    GitHubThread,
    GitLabThread,
    JiraIssue,
    LinearIssue,
    ReplyTarget,
    SlackThread,
)


@dataclass(frozen=True, slots=True)
class RunWorkItem:
    """A run's work item: its id, source and where replies about it go."""

    id: str
    factory_uid: str
    provider: str
    kind: str
    ref: str
    url: str | None
    target: ReplyTarget | None  # None: its source lacks the address (target_of)


def target_of(source: Source) -> ReplyTarget | None:
    """The reply target of a work item's source (None: the source lacks the address)."""
    number = source.number or ""
    if source.provider == "github" and source.project and number.isdigit():
        return GitHubThread(repository=source.project, number=int(number))
    if source.provider == "gitlab" and source.project and number.isdigit():
        iid, url = int(number), source.url
        if source.kind == "merge_request":
            return GitLabThread(project=source.project, kind="merge_request", iid=iid, url=url)
        return GitLabThread(project=source.project, kind="issue", iid=iid, url=url)
    if source.provider == "slack" and source.project and number:
        return SlackThread(channel=source.project, thread_ts=number)
    if source.provider == "linear" and number:
        return LinearIssue(issue_id=number)
    if source.provider == "jira" and number:
        return JiraIssue(issue_key=number)
    return None


def target_json(target: ReplyTarget) -> Any:
    """The target as work_items.target holds it."""
    return msgspec.to_builtins(target)


async def run_work_item(conn: AsyncConnection, run_id: str) -> RunWorkItem | None:
    """The work item `run_id` belongs to, with its reply target; None for a run of none."""
    r, w = t.runs, t.work_items
    query = (
        select(w.c.id, w.c.factory_uid, w.c.provider, w.c.kind, w.c.ref, w.c.url, w.c.target)
        .select_from(r.join(w, w.c.id == r.c.work_item_id))
        .where(r.c.run_id == run_id)
    )
    row = (await conn.execute(query)).first()
    if row is None:
        return None
    target = None if row.target is None else msgspec.convert(row.target, ReplyTarget)
    return RunWorkItem(row.id, row.factory_uid, row.provider, row.kind, row.ref, row.url, target)
