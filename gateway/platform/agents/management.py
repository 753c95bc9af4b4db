"""Agents as the API manages them (/agent/identities): create in the caller's active team, list,
get, update, delete with their API keys in one transaction.

Reading is open to every member of the agent's team; creating, changing and deleting need user
credentials (an agent key must not mint or revoke agent keys). An agent that is a factory's
foreman cannot be deleted (409 agent_is_foreman): the factory would silently stop receiving
work; make another agent its foreman first (`gateway admin set-foreman`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.factories import belongs_to_team
from gateway.accounts.identities import Principal, creation_team, issue_api_key
from gateway.catalog import EnvironmentSpec, ModelSpec
from gateway.errors import AgentIsForeman, Forbidden, InvalidRequest, NotFound
from gateway.platform.catalog.environments import check_environment
from gateway.platform.catalog.llm_models import check_model
from gateway.platform.runs.skill_specs import parse_skill_spec
from gateway.store import tables as t
from gateway.store.types import utcnow

a = t.agents
# run defaults kept in agents.run_defaults; "" clears the text ones on update
TEXT_DEFAULTS = ("prompt", "base_model", "environment_id", "worker_host")
LIST_DEFAULTS = ("skills", "secrets")


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: managing agents needs user credentials")


async def create_agent(
    conn: AsyncConnection,
    principal: Principal,
    fields: dict[str, Any],
    *,
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> tuple[Row[Any], str]:
    """The new agent and its API key (shown once; only its hash is kept)."""
    require_user(principal)
    team = creation_team(principal)
    fields = {key: value for key, value in fields.items() if value is not None}
    checked = await _checked(conn, team, fields, models, environments)
    if (factory_uid := fields.get("factory_uid")) is not None:
        await _check_factory(conn, team, factory_uid)
    uid, now = ids.new_id("agent"), utcnow()
    await conn.execute(
        insert(a).values(
            uid=uid,
            team_uid=team,
            name=fields["name"],
            description=fields.get("description") or None,
            agent_type=fields.get("agent_type"),
            factory_uid=factory_uid,
            run_defaults=_run_defaults({}, checked),
            created_at=now,
            updated_at=now,
        )
    )
    return await _load(conn, uid), await issue_api_key(conn, "agent", uid)


async def list_agents(
    conn: AsyncConnection, principal: Principal, factory_uid: str | None
) -> list[Row[Any]]:
    """Agents of the active team (else of all the caller's teams), oldest first."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = select(a).where(a.c.team_uid.in_(sorted(teams)))
    if factory_uid is not None:
        query = query.where(a.c.factory_uid == factory_uid)
    return list((await conn.execute(query.order_by(a.c.created_at, a.c.uid))).all())


async def get_agent(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
    """404 when it does not exist, 403 when it belongs to a team the caller is not in."""
    row = (await conn.execute(select(a).where(a.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"uid: no agent {uid}")
    if row.team_uid not in principal.team_uids:
        raise Forbidden(f"uid: agent {uid} belongs to a team this credential is not in")
    return row


async def update_agent(
    conn: AsyncConnection,
    principal: Principal,
    uid: str,
    fields: dict[str, Any],
    *,
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> Row[Any]:
    """Fields absent or null stay as they are; "" clears a text field, [] or {} a list or map."""
    require_user(principal)
    row = await get_agent(conn, principal, uid)
    given = {key: value for key, value in fields.items() if value is not None}
    checked = await _checked(conn, row.team_uid, given, models, environments)
    values: dict[str, Any] = {
        "run_defaults": _run_defaults(dict(row.run_defaults or {}), checked),
        "updated_at": utcnow(),
    }
    for key in ("name", "agent_type"):
        if key in given:
            values[key] = given[key]
    if "description" in given:
        values["description"] = given["description"] or None
    await conn.execute(update(a).where(a.c.uid == uid).values(**values))
    return await _load(conn, uid)


async def delete_agent(conn: AsyncConnection, principal: Principal, uid: str) -> None:
    """Deletes the agent and every API key of it, together."""
    require_user(principal)
    await get_agent(conn, principal, uid)
    await _check_not_foreman(conn, uid)
    await conn.execute(
        delete(t.api_keys).where(t.api_keys.c.kind == "agent", t.api_keys.c.principal_uid == uid)
    )
    try:
        async with conn.begin_nested():
            await conn.execute(delete(a).where(a.c.uid == uid))
    except IntegrityError as exc:  # made a foreman since the check
        await _check_not_foreman(conn, uid)
        raise AgentIsForeman(f"uid: agent {uid} was just made a factory's foreman") from exc


def agent_json(row: Row[Any]) -> dict[str, Any]:
    """AgentResponse as the official client parses it; unset optional fields are omitted."""
    defaults = row.run_defaults or {}
    item: dict[str, Any] = {
        "uid": row.uid,
        "name": row.name,
        "team_uid": row.team_uid,
        "created_at": row.created_at,
        "updated_at": row.updated_at or row.created_at,
        "available": True,  # no plan limits here: every agent may run
        "default_runner_uid": "",  # runners are not assigned per agent here
        "memory": {"attached_stores": [], "auto_memory": {"enabled": False}},
        "skills": defaults.get("skills", []),
        "secrets": [{"name": name} for name in defaults.get("secrets", [])],
    }
    optional = {
        "description": row.description,
        "agent_type": row.agent_type,
        "factory_uid": row.factory_uid,
        **{key: defaults.get(key) for key in (*TEXT_DEFAULTS, "credential_strategy")},
        "mcp_servers": defaults.get("mcp_servers"),
    }
    item.update({key: value for key, value in optional.items() if value is not None})
    return item


async def _checked(
    conn: AsyncConnection,
    team_uid: str,
    fields: dict[str, Any],
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> dict[str, Any]:
    """The run defaults among `fields`, validated; "" stands for "clear"."""
    checked = {key: fields[key] for key in (*TEXT_DEFAULTS, "credential_strategy") if key in fields}
    if "worker_host" in checked:
        checked["worker_host"] = checked["worker_host"].strip()
    if checked.get("base_model"):
        check_model(models, checked["base_model"], "base_model")
    if checked.get("environment_id"):
        check_environment(environments, checked["environment_id"], {team_uid}, "environment_id")
    if "mcp_servers" in fields:
        checked["mcp_servers"] = fields["mcp_servers"]
    if "skills" in fields:
        checked["skills"] = _skills(fields["skills"])
    if "secrets" in fields:
        checked["secrets"] = await _secrets(conn, team_uid, fields["secrets"])
    return checked


def _run_defaults(current: dict[str, Any], checked: dict[str, Any]) -> dict[str, Any] | None:
    for key, value in checked.items():
        if value in ("", [], {}):
            current.pop(key, None)
        else:
            current[key] = value
    return current or None


def _skills(specs: list[str]) -> list[str]:
    for i, spec in enumerate(specs):
        parse_skill_spec(spec, f"skills[{i}]")
        if spec in specs[:i]:
            raise InvalidRequest(f"skills[{i}]: {spec!r} is listed twice")
    return specs


async def _secrets(
    conn: AsyncConnection, team_uid: str, secrets: list[dict[str, str]]
) -> list[str]:
    names = [secret["name"] for secret in secrets]
    s = t.team_secrets
    query = select(s.c.name).where(s.c.team_uid == team_uid, s.c.name.in_(names))
    known = set((await conn.execute(query)).scalars())
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InvalidRequest(f"secrets[{i}].name: {name!r} is listed twice")
        if name not in known:
            raise InvalidRequest(f"secrets[{i}].name: no team secret named {name!r}")
    return names


async def _check_factory(conn: AsyncConnection, team_uid: str, factory_uid: str) -> None:
    if not await belongs_to_team(conn, factory_uid, team_uid):
        raise InvalidRequest(f"factory_uid: no factory {factory_uid} in this team")


async def _check_not_foreman(conn: AsyncConnection, uid: str) -> None:
    f = t.factories
    query = select(f.c.uid).where(f.c.foreman_agent_uid == uid).order_by(f.c.uid)
    factories = list((await conn.execute(query)).scalars())
    if factories:
        raise AgentIsForeman(
            f"uid: agent {uid} is the foreman of factory {', '.join(factories)}; make another "
            "agent its foreman first"
        )


async def _load(conn: AsyncConnection, uid: str) -> Row[Any]:
    row = (await conn.execute(select(a).where(a.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"uid: no agent {uid}")
    return row
