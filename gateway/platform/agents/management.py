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

import msgspec
from msgspec import UNSET
from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import belongs_to_team
from gateway.foundation.accounts.identities import Principal, creation_team, issue_api_key
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.catalog import EnvironmentSpec, ModelSpec, check_environment, check_model
from gateway.kernel.errors import AgentIsForeman, Forbidden, InvalidRequest, NotFound
from gateway.platform.agents.models import (
    Agent,
    AgentCreate,
    AgentUpdate,
    CreatedAgent,
    RunDefaults,
    SecretRef,
)
from gateway.platform.runs.creation.worker_pinning import check_worker
from gateway.platform.runs.skills.specs import parse_skill_spec

a = t.agents
RUN_DEFAULTS = RunDefaults.__struct_fields__


def require_user(principal: Principal) -> None:
    if principal.kind != "user":
        raise Forbidden("Authorization: managing agents needs user credentials")


async def create_agent(
    conn: AsyncConnection,
    principal: Principal,
    spec: AgentCreate,
    *,
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> CreatedAgent:
    """The new agent with its API key (shown once; only its hash is kept)."""
    require_user(principal)
    team = creation_team(principal)
    changes = await _checked(conn, team, spec, models, environments)
    if spec.factory_uid is not None:
        await _check_factory(conn, team, spec.factory_uid)
    uid, now = ids.new_id("agent"), utcnow()
    await conn.execute(
        insert(a).values(
            uid=uid,
            team_uid=team,
            name=spec.name,
            description=spec.description or None,
            agent_type=spec.agent_type,
            factory_uid=spec.factory_uid,
            run_defaults=_run_defaults(RunDefaults(), changes).to_stored(),
            created_at=now,
            updated_at=now,
        )
    )
    key = await issue_api_key(conn, "agent", uid)
    return CreatedAgent.with_key(await _load(conn, uid), key)


async def list_agents(
    conn: AsyncConnection, principal: Principal, factory_uid: str | None
) -> list[Agent]:
    """Agents of the active team (else of all the caller's teams), oldest first."""
    teams = [principal.active_team_uid] if principal.active_team_uid else principal.team_uids
    query = select(a).where(a.c.team_uid.in_(sorted(teams)))
    if factory_uid is not None:
        query = query.where(a.c.factory_uid == factory_uid)
    rows = await conn.execute(query.order_by(a.c.created_at, a.c.uid))
    return [Agent.from_row(row) for row in rows]


async def get_agent(conn: AsyncConnection, principal: Principal, uid: str) -> Agent:
    """404 when it does not exist, 403 when it belongs to a team the caller is not in."""
    return Agent.from_row(await _visible_row(conn, principal, uid))


async def _visible_row(conn: AsyncConnection, principal: Principal, uid: str) -> Row[Any]:
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
    patch: AgentUpdate,
    *,
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> Agent:
    """Fields absent or null stay as they are; "" clears a text field, [] or {} a list or map."""
    require_user(principal)
    row = await _visible_row(conn, principal, uid)
    changes = await _checked(conn, row.team_uid, patch, models, environments)
    defaults = _run_defaults(RunDefaults.stored(row.run_defaults), changes)
    values: dict[str, object] = {"run_defaults": defaults.to_stored(), "updated_at": utcnow()}
    if _given(patch.name):
        values["name"] = patch.name
    if _given(patch.agent_type):
        values["agent_type"] = patch.agent_type
    if _given(patch.description):
        values["description"] = patch.description or None
    await conn.execute(update(a).where(a.c.uid == uid).values(**values))
    return await _load(conn, uid)


async def delete_agent(conn: AsyncConnection, principal: Principal, uid: str) -> None:
    """Deletes the agent and every API key of it, together."""
    require_user(principal)
    await _visible_row(conn, principal, uid)
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


async def _checked(
    conn: AsyncConnection,
    team_uid: str,
    spec: AgentCreate | AgentUpdate,
    models: Sequence[ModelSpec],
    environments: Sequence[EnvironmentSpec],
) -> dict[str, object]:
    """The run defaults `spec` gives (neither absent nor null), validated; "", [] and {} stand
    for "clear"."""
    given = {name: value for name in RUN_DEFAULTS if _given(value := getattr(spec, name))}
    if "worker_host" in given:
        given["worker_host"] = str(given["worker_host"]).strip()
        await check_worker(conn, team_uid, str(given["worker_host"]), "worker_host")
    if spec.base_model:
        check_model(models, spec.base_model, "base_model")
    if spec.environment_id:
        check_environment(environments, spec.environment_id, {team_uid}, "environment_id")
    if isinstance(spec.skills, list):
        given["skills"] = _skills(spec.skills)
    if isinstance(spec.secrets, list):
        given["secrets"] = await _secrets(conn, team_uid, spec.secrets)
    return given


def _given(value: object) -> bool:
    return value is not None and value is not UNSET


def _run_defaults(current: RunDefaults, changes: dict[str, object]) -> RunDefaults:
    """`current` with `changes`; a change to "", [] or {} unsets the default."""
    unset = RunDefaults()
    cleared = {
        name: getattr(unset, name) for name, value in changes.items() if value in ("", [], {})
    }
    kept = {name: value for name, value in changes.items() if name not in cleared}
    return msgspec.structs.replace(current, **kept, **cleared)


def _skills(specs: list[str]) -> list[str]:
    for i, spec in enumerate(specs):
        parse_skill_spec(spec, f"skills[{i}]")
        if spec in specs[:i]:
            raise InvalidRequest(f"skills[{i}]: {spec!r} is listed twice")
    return specs


async def _secrets(conn: AsyncConnection, team_uid: str, secrets: list[SecretRef]) -> list[str]:
    names = [secret.name for secret in secrets]
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


async def _load(conn: AsyncConnection, uid: str) -> Agent:
    row = (await conn.execute(select(a).where(a.c.uid == uid))).first()
    if row is None:
        raise NotFound(f"uid: no agent {uid}")
    return Agent.from_row(row)
