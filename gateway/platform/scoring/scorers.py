"""Scorers of a factory's runs: the minimal record manual dispatch needs (scope, benchmark flag,
version). Creating one needs manage access to the factory; reading, access to it.

A scorer scores the runs of every agent of the factory (`all_agents`) or of the agents it names
(`selected_agents`). `benchmark_managed` scorers belong to a benchmark suite; no API operation
sets the flag (this service's benchmark suites judge trials by their outcome, not by scorers), and
manual dispatch refuses them.
"""

from __future__ import annotations

from msgspec import UNSET
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory, require_manage_access
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.platform.scoring.models import ScopeMode, Scorer, ScorerCreate, ScorerUpdate

sc = t.scorers


async def create_scorer(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    spec: ScorerCreate,
    *,
    benchmark_managed: bool = False,
) -> Scorer:
    require_manage_access(principal, factory)
    agent_uids = await _scope(conn, factory, spec.scope_mode, spec.agent_uids)
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(sc).values(
            uid=uid,
            factory_uid=factory.uid,
            name=spec.name,
            prompt=spec.prompt,
            scope_mode=spec.scope_mode,
            agent_uids=agent_uids,
            active=spec.active,
            self_improvement_enabled=spec.self_improvement_enabled,
            benchmark_managed=benchmark_managed,
            version=1,
            created_by_uid=principal.uid,
            created_at=now,
            updated_at=now,
        )
    )
    return await get_scorer(conn, factory, uid)


UPDATABLE = ("name", "prompt", "scope_mode", "agent_uids", "active", "self_improvement_enabled")
PLAIN = ("name", "prompt", "active", "self_improvement_enabled")  # written as given


async def update_scorer(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str, changes: ScorerUpdate
) -> Scorer:
    """Applies the given fields (at least one) and bumps the version. `scope_mode` or
    `agent_uids` replaces the scope in full: the mode given (else the current one) with the
    agents given (else none)."""
    require_manage_access(principal, factory)
    scorer = await get_scorer(conn, factory, uid)
    if all(getattr(changes, name) is UNSET for name in UPDATABLE):
        raise InvalidRequest(f"body: give at least one of {', '.join(UPDATABLE)}")
    values: dict[str, object] = {
        name: getattr(changes, name) for name in PLAIN if getattr(changes, name) is not UNSET
    }
    if changes.scope_mode is not UNSET or changes.agent_uids is not UNSET:
        mode = scorer.scope_mode if changes.scope_mode is UNSET else changes.scope_mode
        agent_uids = None if changes.agent_uids is UNSET else changes.agent_uids
        values["scope_mode"] = mode
        values["agent_uids"] = await _scope(conn, factory, mode, agent_uids)
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
    await remove_scorer(conn, uid)


async def remove_scorer(conn: AsyncConnection, uid: str) -> None:
    """The scorer, its scoring jobs and their attempts, gone for good."""
    await conn.execute(delete(t.scoring_attempts).where(t.scoring_attempts.c.scorer_uid == uid))
    await conn.execute(delete(t.scoring_jobs).where(t.scoring_jobs.c.scorer_uid == uid))
    await conn.execute(delete(sc).where(sc.c.uid == uid))


async def list_scorers(conn: AsyncConnection, factory: Factory) -> list[Scorer]:
    query = select(sc).where(sc.c.factory_uid == factory.uid).order_by(sc.c.created_at, sc.c.uid)
    return [Scorer.from_row(row) for row in await conn.execute(query)]


async def get_scorer(conn: AsyncConnection, factory: Factory, uid: str) -> Scorer:
    """The factory's scorer; 404 when none has that uid in this factory."""
    scorer = await find_scorer(conn, uid)
    if scorer is None or scorer.factory_uid != factory.uid:
        raise NotFound(f"scorer_uid: no scorer {uid} in this factory")
    return scorer


async def find_scorer(conn: AsyncConnection, uid: str) -> Scorer | None:
    row = (await conn.execute(select(sc).where(sc.c.uid == uid))).first()
    return None if row is None else Scorer.from_row(row)


def scores_agent(scorer: Scorer, agent_uid: str | None) -> bool:
    """Whether the scorer is configured for runs executed by `agent_uid`."""
    if scorer.scope_mode == "all_agents":
        return agent_uid is not None
    return agent_uid in scorer.agent_uids


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
