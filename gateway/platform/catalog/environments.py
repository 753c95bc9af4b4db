"""Cloud environments (settings.environments) as a caller sees them: the ones a team of theirs
owns, the ones their teams are guests of, and the link-shared ones; with the newest run that
selected each (agent_config.environment_id), from which `setup_failed` is read."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.rows import from_row
from gateway.kernel.catalog import Access, EnvironmentSpec, access_of
from gateway.platform.runs.record.models import SETUP_FAILURE

SortBy = Literal["name", "last_updated"]
r = t.runs


@dataclass(frozen=True, slots=True)
class SelectingRun:
    """A run that selected an environment (agent_config.environment_id)."""

    run_id: str
    title: str | None
    state: str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    error_code: str | None  # of its status message

    @classmethod
    def from_row(cls, row: Row[Any]) -> SelectingRun:
        return from_row(cls, row, error_code=(row.status_message or {}).get("error_code"))


@dataclass(frozen=True, slots=True)
class VisibleEnvironment:
    spec: EnvironmentSpec
    access: Access
    newest_run: SelectingRun | None  # the newest visible run that selected it
    last_started_at: datetime | None  # when the latest of those runs started


async def list_environments(
    conn: AsyncConnection,
    environments: Sequence[EnvironmentSpec],
    teams: Collection[str],
    sort_by: SortBy,
) -> list[VisibleEnvironment]:
    visible = [(spec, access) for spec in environments if (access := access_of(spec, teams))]
    uids = [spec.uid for spec, _ in visible]
    newest, started = await _run_activity(conn, uids, teams)
    found = [
        VisibleEnvironment(spec, access, newest.get(spec.uid), started.get(spec.uid))
        for spec, access in visible
    ]
    if sort_by == "name":
        found.sort(key=lambda e: (e.spec.name.lower(), e.spec.uid))
    else:  # most recently updated first
        found.sort(key=lambda e: (e.spec.last_updated, e.spec.uid), reverse=True)
    return found


def setup_failed(environment: VisibleEnvironment) -> bool:
    """True when the newest run in it failed while its environment was being set up."""
    run = environment.newest_run
    return run is not None and run.state == "FAILED" and run.error_code == SETUP_FAILURE


async def _run_activity(
    conn: AsyncConnection, uids: list[str], teams: Collection[str]
) -> tuple[dict[str, SelectingRun], dict[str, datetime]]:
    """Per environment: the newest run of `teams` that selected it, and the latest start."""
    if not uids or not teams:
        return {}, {}
    selected = r.c.agent_config["environment_id"].as_string()
    scope = (r.c.team_uid.in_(sorted(teams)), selected.in_(uids))
    summary = (
        select(selected.label("uid"), func.max(r.c.created_at), func.max(r.c.started_at))
        .where(*scope)
        .group_by(selected)
    )
    latest = {row[0]: (row[1], row[2]) for row in await conn.execute(summary)}
    newest: dict[str, SelectingRun] = {}
    for uid, (created_at, _) in latest.items():
        query = (
            select(r)
            .where(*scope, selected == uid, r.c.created_at == created_at)
            .order_by(r.c.run_id.desc())
            .limit(1)
        )
        if (row := (await conn.execute(query)).first()) is not None:
            newest[uid] = SelectingRun.from_row(row)
    return newest, {uid: started for uid, (_, started) in latest.items() if started is not None}
