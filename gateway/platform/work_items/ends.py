"""Work items that provider activity ends (docs/providers.md#how-a-work-item-ends): a merged
pull or merge request completes its own work item, the issues it closes and the work items whose
runs opened it (`DONE`); one closed unmerged, or an issue closed as not planned, is `CANCELLED`.
Written in the evaluator's batch transaction, for the deliveries it claimed (once each); a work
item already in a last stage stays where it is, and the move fires the factory's
`work_item_stage_changed` triggers like any other (stages.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.platform.work_items.stages import WorkItemRow, move_work_items
from gateway.webhook_gateway.evaluator.run_platform import WorkItemEnd

FINAL = ("DONE", "CANCELLED")
w, r = t.work_items, t.runs
COLUMNS = (w.c.id, w.c.stage, w.c.factory_uid, w.c.provider, w.c.ref)


async def end_work_items(conn: AsyncConnection, ends: Sequence[WorkItemEnd]) -> None:
    moves: dict[str, tuple[WorkItemRow, str, datetime]] = {}
    for end in ends:
        ending = end.ending
        open_ = and_(
            w.c.team_uid == end.team_uid, w.c.provider == ending.provider, w.c.stage.not_in(FINAL)
        )
        found = [WorkItemRow(*row) for row in await conn.execute(
            select(*COLUMNS).where(open_, w.c.ref.in_(ending.refs))
        )]  # fmt: skip
        if ending.pull_url and ending.project:
            found += await _opened(conn, open_, ending.project, ending.pull_url)
        for item in found:
            moves[item.id] = (item, ending.stage, end.at)
    await move_work_items(conn, list(moves.values()))


async def _opened(
    conn: AsyncConnection, open_: ColumnElement[bool], project: str, pull_url: str
) -> list[WorkItemRow]:
    """The open work items of `project` one of whose runs reported the pull request at
    `pull_url` (a PULL_REQUEST artifact): read among that project's open work items only."""
    of_project = or_(w.c.ref.startswith(project + "#"), w.c.ref.startswith(project + "!"))
    query = (
        select(*COLUMNS, r.c.artifacts)
        .select_from(w.join(r, r.c.work_item_id == w.c.id))
        .where(open_, of_project, r.c.artifacts.is_not(None))
    )
    found: dict[str, WorkItemRow] = {}
    for *columns, artifacts in await conn.execute(query):
        if any(_is_pull(artifact, pull_url) for artifact in artifacts or ()):
            found[columns[0]] = WorkItemRow(*columns)
    return list(found.values())


def _is_pull(artifact: object, url: str) -> bool:
    if not isinstance(artifact, dict) or artifact.get("artifact_type") != "PULL_REQUEST":
        return False
    data = artifact.get("data")
    return isinstance(data, dict) and data.get("url") == url
