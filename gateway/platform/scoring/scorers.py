"""Scorers of a factory's runs: the minimal record manual dispatch needs (scope, benchmark flag,
version). Creating one needs manage access to the factory; reading, access to it.

A scorer scores the runs of every agent of the factory (`all_agents`) or of the agents it names
(`selected_agents`). `benchmark_managed` scorers belong to a benchmark suite; no API operation
sets the flag (benchmark suites are not part of this service), and manual dispatch refuses them.
"""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.factories import Factory, require_manage_access
from gateway.accounts.identities import Principal
from gateway.errors import InvalidRequest, NotFound
from gateway.store import tables as t
from gateway.store.types import utcnow

ScopeMode = Literal["all_agents", "selected_agents"]
sc = t.scorers


async def create_scorer(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    fields: dict[str, Any],
    *,
    benchmark_managed: bool = False,
) -> Row[Any]:
    require_manage_access(principal, factory)
    mode: ScopeMode = fields.get("scope_mode") or "all_agents"
    agent_uids = await _scope(conn, factory, mode, fields.get("agent_uids"))
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(sc).values(
            uid=uid,
            factory_uid=factory.uid,
            name=fields["name"],
            prompt=fields["prompt"],
            scope_mode=mode,
            agent_uids=agent_uids,
            active=fields.get("active", True),
            self_improvement_enabled=fields.get("self_improvement_enabled", False),
            benchmark_managed=benchmark_managed,
            version=1,
            created_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
        )
    )
    return await get_scorer(conn, factory, uid)


UPDATABLE = ("name", "prompt", "scope_mode", "agent_uids", "active", "self_improvement_enabled")


async def update_scorer(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str, changes: dict[str, Any]
) -> Row[Any]:
    """Applies the given fields (at least one) and bumps the version. `scope_mode` or
    `agent_uids` replaces the scope in full: the mode given (else the current one) with the
    agents given (else none)."""
    require_manage_access(principal, factory)
    row = await get_scorer(conn, factory, uid)
    if not changes:
        raise InvalidRequest(f"body: give at least one of {', '.join(UPDATABLE)}")
    values = {k: v for k, v in changes.items() if k not in ("scope_mode", "agent_uids")}
    if "scope_mode" in changes or "agent_uids" in changes:
        mode: ScopeMode = changes.get("scope_mode") or row.scope_mode
        values["scope_mode"] = mode
        values["agent_uids"] = await _scope(conn, factory, mode, changes.get("agent_uids"))
    await conn.execute(
        update(sc)
        .where(sc.c.uid == uid)
        .values(**values, version=sc.c.version + 1, updated_at=utcnow())
    )
    return await get_scorer(conn, factory, uid)


async def delete_scorer(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str
) -> None:
    """Deletes the scorer for good, with its scoring jobs and their attempts (scores and
    reasoning)."""
    require_manage_access(principal, factory)
    await get_scorer(conn, factory, uid)
    await conn.execute(delete(t.scoring_attempts).where(t.scoring_attempts.c.scorer_uid == uid))
    await conn.execute(delete(t.scoring_jobs).where(t.scoring_jobs.c.scorer_uid == uid))
    await conn.execute(delete(sc).where(sc.c.uid == uid))


async def list_scorers(conn: AsyncConnection, factory: Factory) -> list[Row[Any]]:
    query = select(sc).where(sc.c.factory_uid == factory.uid).order_by(sc.c.created_at, sc.c.uid)
    return list((await conn.execute(query)).all())


async def get_scorer(conn: AsyncConnection, factory: Factory, uid: str) -> Row[Any]:
    """The factory's scorer; 404 when none has that uid in this factory."""
    row = await find_scorer(conn, uid)
    if row is None or row.factory_uid != factory.uid:
        raise NotFound(f"scorer_uid: no scorer {uid} in this factory")
    return row


async def find_scorer(conn: AsyncConnection, uid: str) -> Row[Any] | None:
    return (await conn.execute(select(sc).where(sc.c.uid == uid))).first()


def scores_agent(scorer: Row[Any], agent_uid: str | None) -> bool:
    """Whether the scorer is configured for runs executed by `agent_uid`."""
    if scorer.scope_mode == "all_agents":
        return agent_uid is not None
    return agent_uid in (scorer.agent_uids or [])


def scorer_json(row: Row[Any]) -> dict[str, Any]:
    return {
        "uid": row.uid,
        "factory_uid": row.factory_uid,
        "name": row.name,
        "prompt": row.prompt,
        "scope_mode": row.scope_mode,
        "agent_uids": row.agent_uids or [],
        "active": row.active,
        "self_improvement_enabled": row.self_improvement_enabled,
        "benchmark_managed": row.benchmark_managed,
        "version": row.version,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


async def _scope(
    conn: AsyncConnection, factory: Factory, mode: ScopeMode, agent_uids: list[str] | None
) -> list[str] | None:
    """The selected agents: 1 or more distinct agents of the factory's team."""
    if mode == "all_agents":
        if agent_uids:
            raise InvalidRequest("agent_uids: only with scope_mode selected_agents")
        return None
    if not agent_uids:
        raise InvalidRequest("agent_uids: scope_mode selected_agents needs at least one agent")
    a = t.agents
    query = select(a.c.uid).where(a.c.uid.in_(agent_uids), a.c.team_uid == factory.team_uid)
    known = set((await conn.execute(query)).scalars())
    for i, uid in enumerate(agent_uids):
        if uid in agent_uids[:i]:
            raise InvalidRequest(f"agent_uids[{i}]: {uid} is listed twice")
        if uid not in known:
            raise InvalidRequest(f"agent_uids[{i}]: no agent {uid} in the factory's team")
    return agent_uids
