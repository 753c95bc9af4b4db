"""POST /agent/runs and GET /agent/runs: standalone cloud agent runs, created and listed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.accounts.identities import Principal
from gateway.catalog import ModelSpec
from gateway.errors import InvalidRequest
from gateway.platform.catalog.llm_models import check_model
from gateway.platform.runs.records import (
    CONFIG_KEYS,
    NewRun,
    can_view,
    find_run,
    insert_run,
    newest_root_run,
)
from gateway.platform.runs.skill_specs import parse_skill_spec
from gateway.store import tables as t

MAX_PROMPT = 100_000
r = t.runs


def parse_config(
    value: Any, models: Sequence[ModelSpec], field: str = "config"
) -> dict[str, Any] | None:
    """The run's agent config without null values: `model_id` one of `models` and enabled, a
    valid `skill_spec`, whose skill names the run unless `name` is given (spec 2.2)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest(f"{field}: expected an object")
    for key, item in value.items():
        if key == "mcp_servers":
            if not isinstance(item, dict):
                raise InvalidRequest(f"{field}.mcp_servers: expected an object")
        elif key not in CONFIG_KEYS:
            raise InvalidRequest(f"{field}.{key}: unknown field")
        elif item is not None and (not isinstance(item, str) or len(item) > 2000):
            raise InvalidRequest(f"{field}.{key}: expected a string")
    config = {key: item for key, item in value.items() if item is not None}
    if "model_id" in config:
        check_model(models, config["model_id"], f"{field}.model_id")
    if "skill_spec" in config:
        skill = parse_skill_spec(config["skill_spec"], f"{field}.skill_spec")
        config.setdefault("name", skill.name)
    return config


def _optional_str(body: dict[str, Any], name: str, limit: int) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise InvalidRequest(f"{name}: expected a non-blank string of at most {limit} characters")
    return value


async def create_agent_run(
    conn: AsyncConnection, principal: Principal, body: dict[str, Any], models: Sequence[ModelSpec]
) -> Row[Any]:
    """A QUEUED cloud run. Extensions beyond the official body: `parent_run_id` (a child in the
    parent's tree and conversation) and `conversation_id` (a new top-level run continuing it)."""
    unknown = sorted(set(body) - {"prompt", "config", "title", "parent_run_id", "conversation_id"})
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field")
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidRequest("prompt: required, a non-blank string")
    if len(prompt) > MAX_PROMPT:
        raise InvalidRequest(f"prompt: longer than {MAX_PROMPT} characters")
    parent_id = _optional_str(body, "parent_run_id", 64)
    conversation = _optional_str(body, "conversation_id", 64)
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
        prompt=prompt,
        title=_optional_str(body, "title", 500),
        team_uid=team,
        creator=principal,
        agent_config=parse_config(body.get("config"), models),
        parent=parent,
        conversation_id=conversation,
        factory_uid=None if parent is None else parent.factory_uid,
        # an agent key attributes the run to that agent (spec 5), which executes it
        agent_uid=principal.uid if principal.kind == "agent" else None,
    )
    return await insert_run(conn, new)


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


async def list_runs(
    conn: AsyncConnection, principal: Principal, query: RunQuery
) -> tuple[list[Row[Any]], bool]:
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
    return list(rows[: query.limit]), len(rows) > query.limit


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
