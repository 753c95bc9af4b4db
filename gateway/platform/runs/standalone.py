"""POST /agent/runs and GET /agent/runs: standalone cloud agent runs, created and listed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from msgspec import UNSET, structs
from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.accounts.identities import Principal
from gateway.catalog import ModelSpec
from gateway.errors import InvalidRequest
from gateway.platform.catalog.llm_models import check_model
from gateway.platform.runs.models import AgentConfig, RunCreate, RunCreated, RunFilters, RunRecord
from gateway.platform.runs.records import NewRun, can_view, find_run, insert_run, newest_root_run
from gateway.platform.runs.skill_specs import parse_skill_spec
from gateway.store import tables as t

r = t.runs


def parse_config(
    config: AgentConfig | None, models: Sequence[ModelSpec], field: str = "config"
) -> AgentConfig | None:
    """The run's agent config without null values: `model_id` one of `models` and enabled, a
    valid `skill_spec`, whose skill names the run unless `name` is given (spec 2.2)."""
    if config is None:
        return None
    config = structs.replace(config)  # a copy, its nulls dropped
    for name in config.__struct_fields__:
        if getattr(config, name) is None:
            setattr(config, name, UNSET)
    for name in AgentConfig.SERVICE_SET:
        if getattr(config, name) is not UNSET:
            raise InvalidRequest(f"{field}.{name}: set by the service, not by a request")
    if isinstance(config.model_id, str):
        check_model(models, config.model_id, f"{field}.model_id")
    if isinstance(config.skill_spec, str):
        skill = parse_skill_spec(config.skill_spec, f"{field}.skill_spec")
        if config.name is UNSET:
            config.name = skill.name
    return config


async def create_agent_run(
    conn: AsyncConnection, principal: Principal, spec: RunCreate, models: Sequence[ModelSpec]
) -> RunCreated:
    """A QUEUED cloud run. Extensions beyond the official body: `parent_run_id` (a child in the
    parent's tree and conversation) and `conversation_id` (a new top-level run continuing it)."""
    parent_id, conversation = spec.parent_run_id, spec.conversation_id
    if parent_id and conversation:
        raise InvalidRequest("conversation_id: give either parent_run_id or conversation_id")
    parent = None
    if parent_id is not None:
        parent = await find_run(conn, parent_id)
        if parent is None or not can_view(principal, parent):
            raise InvalidRequest(f"parent_run_id: no visible run {parent_id}")
    if conversation is not None:
        current = await newest_root_run(conn, conversation)
        if current is None or not can_view(principal, current):
            raise InvalidRequest(f"conversation_id: no visible conversation {conversation}")
    team = principal.active_team_uid or min(principal.team_uids, default=None)
    if parent is not None and parent.team_uid in principal.team_uids:
        team = parent.team_uid  # a child stays in its tree's team
    new = NewRun(
        prompt=spec.prompt,
        title=spec.title,
        team_uid=team,
        creator=principal,
        agent_config=parse_config(spec.config, models),
        parent=parent,
        conversation_id=conversation,
        factory_uid=None if parent is None else parent.factory_uid,
        # an agent key attributes the run to that agent (spec 5), which executes it
        agent_uid=principal.uid if principal.kind == "agent" else None,
    )
    run = await insert_run(conn, new)
    return RunCreated(run.run_id, run.run_id, run.state)


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
