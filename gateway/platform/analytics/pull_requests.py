"""Pull requests the factory's runs produced, one per URL (docs/metrics.md).

A PULL_REQUEST artifact whose URL was never seen makes a new record that belongs to the artifact's
run and its run tree (the tree's cost is what the PR is attributed); a later artifact of the same
URL, from any run, only refreshes title, branch and state. Size and merge detail come from
code-forge `pull_request` webhook payloads (`record_forge_detail`); a PR that no payload
described keeps them None.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.platform.analytics import pr_costs
from gateway.platform.analytics.models import PullRequest

p = t.pull_requests


class ProducingRun(Protocol):
    """What a PR's record takes from the run that reported it."""

    @property
    def run_id(self) -> str: ...
    @property
    def root_run_id(self) -> str: ...
    @property
    def factory_uid(self) -> str | None: ...
    @property
    def team_uid(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...


async def record(
    conn: AsyncConnection,
    run: ProducingRun,
    artifact_uid: str,
    at: datetime,
    *,
    url: str | None,
    title: str | None,
    branch: str | None,
    state: str | None,
) -> None:
    """The PR of a PULL_REQUEST artifact just stored for `run`: new at its first appearance."""
    if not url:
        return
    detail = {"title": title, "branch": branch, "state": state}
    known = {key: value for key, value in detail.items() if value is not None}
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    # concurrent first appearances: the first commit wins, the other becomes a refresh
    new = await conn.execute(
        insert(p)
        .values(
            url=url,
            factory_uid=run.factory_uid,
            team_uid=run.team_uid,
            run_id=run.run_id,
            root_run_id=run.root_run_id,
            root_created_at=await _root_created_at(conn, run),
            artifact_uid=artifact_uid,
            first_seen_at=at,
            updated_at=at,
            **detail,
        )
        .on_conflict_do_nothing(index_elements=["url"])
    )
    if new.rowcount:  # the tree has one PR more: its cost is shared anew
        await pr_costs.refresh_tree(conn, run.root_run_id)
    await conn.execute(
        update(p)
        .where(p.c.url == url, p.c.artifact_uid != artifact_uid)
        .values(updated_at=at, **known)
    )


async def _root_created_at(conn: AsyncConnection, run: ProducingRun) -> datetime:
    moment: datetime = run.created_at
    if run.root_run_id != run.run_id:
        found = select(t.runs.c.created_at).where(t.runs.c.run_id == run.root_run_id)
        moment = (await conn.execute(found)).scalar_one_or_none() or moment
    return moment


@dataclass(frozen=True, slots=True)
class ForgeDetail:
    """What a code-forge payload says of a PR; None where it says nothing usable."""

    url: str
    title: str | None
    state: str | None
    additions: int | None
    deletions: int | None
    changed_files: int | None
    merged_at: datetime | None

    def known(self) -> dict[str, object]:
        """The PR columns this detail sets (those it knows)."""
        fields = ("title", "state", "additions", "deletions", "changed_files", "merged_at")
        return {name: value for name in fields if (value := getattr(self, name)) is not None}


def forge_detail(payload: Any) -> ForgeDetail | None:
    """Size and state of the PR in a GitHub-style `pull_request` event payload, else None."""
    pr = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pr, dict) or not isinstance(pr.get("html_url"), str):
        return None
    merged_at = _moment(pr.get("merged_at"))
    state = "merged" if merged_at is not None else pr.get("state")
    return ForgeDetail(
        url=pr["html_url"],
        title=pr.get("title") if isinstance(pr.get("title"), str) else None,
        state=state if state in ("open", "closed", "merged") else None,
        additions=_count(pr.get("additions")),
        deletions=_count(pr.get("deletions")),
        changed_files=_count(pr.get("changed_files")),
        merged_at=merged_at,
    )


# a delivery whose raw body lacks this cannot describe a PR: it is not parsed for detail
FORGE_MARK = b'"pull_request"'


async def record_forge_detail(
    conn: AsyncConnection, payload: Any, webhook_uid: str | None = None
) -> bool:
    """Stores the detail of a code-forge payload on the PR it names, when a run produced that PR
    (of the webhook's own factory, when the payload came through `webhook_uid`); True when one
    was updated."""
    detail = forge_detail(payload)
    if detail is None:
        return False
    now = utcnow()
    query = update(p).where(p.c.url == detail.url)
    if webhook_uid is not None:  # a sender reaches only the PRs of its webhook's factory
        owner = select(t.webhooks.c.factory_uid).where(t.webhooks.c.uid == webhook_uid)
        query = query.where(p.c.factory_uid == owner.scalar_subquery())
    changes = detail.known()
    result = await conn.execute(query.values(updated_at=now, detail_updated_at=now, **changes))
    return bool(result.rowcount)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


@dataclass(frozen=True, slots=True)
class PullRequestPage:
    items: list[PullRequest]
    more: bool


async def list_pull_requests(
    conn: AsyncConnection,
    factory_uid: str,
    *,
    updated_after: datetime | None,
    limit: int,
    after: tuple[datetime, str] | None,
) -> PullRequestPage:
    """The factory's PRs, newest first appearance first (url breaks ties)."""
    query = select(p).where(p.c.factory_uid == factory_uid)
    if updated_after is not None:
        query = query.where(p.c.updated_at > updated_after)
    if after is not None:
        query = query.where(tuple_(p.c.first_seen_at, p.c.url) < tuple_(after[0], after[1]))
    query = query.order_by(p.c.first_seen_at.desc(), p.c.url.desc()).limit(limit + 1)
    rows = list((await conn.execute(query)).all())
    return PullRequestPage([PullRequest.from_row(row) for row in rows[:limit]], len(rows) > limit)
