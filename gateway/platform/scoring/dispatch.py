"""Manual scorer dispatch (spec 4.7): one scorer for selected runs, or selected scorers for one
run. Every pair is checked before anything is written, so an invalid selection (a 400 naming
the item) starts no scoring job. Each valid pair gets a QUEUED scoring job, or finds the one
already queued; manual dispatch ignores the scorer's `active` flag and its sampling rate (a
completed run's sampled jobs are sampling.py's).

Rules, as docs/api.md states them:
- the caller has manage access to the factory and can view every run;
- 1 to 100 distinct, nonzero UUIDs;
- a run belongs to the factory and its team, has a conversation (its session has begun:
  started_at or session_id), is executed by a factory agent (the foreman, or an agent linked to
  the factory), and is not a scoring job run (source SCORER);
- a scorer belongs to the factory, is not benchmark-managed, and is configured for the run's
  agent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory, require_manage_access
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import InvalidRequest, NotFound
from gateway.platform.runs.record.store import can_view, find_run, visible_run
from gateway.platform.scoring.models import DispatchResult, Scorer
from gateway.platform.scoring.scorers import find_scorer, get_scorer, scores_agent

NIL_UUID = "00000000-0000-0000-0000-000000000000"
SCORING_SOURCE = "SCORER"  # the source of a run in which a scorer scores another run
j = t.scoring_jobs


class ScorableRun(Protocol):
    """What dispatch reads of a run."""

    @property
    def run_id(self) -> str: ...
    @property
    def factory_uid(self) -> str | None: ...
    @property
    def team_uid(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def started_at(self) -> datetime | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def agent_uid(self) -> str | None: ...


async def dispatch_scorer(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    scorer_uid: str,
    run_ids: list[str],
) -> list[DispatchResult]:
    """POST /factory/{factory_uid}/scorers/{scorer_uid}/dispatch."""
    require_manage_access(principal, factory)
    _check_uuids(run_ids, "run_ids")
    scorer = await get_scorer(conn, factory, scorer_uid)
    _check_scorer(scorer, "scorer_uid")
    agents = await factory_agents(conn, factory)
    runs = []
    for i, run_id in enumerate(run_ids):
        field = f"run_ids[{i}]"
        run = await find_run(conn, run_id)
        if run is None or not can_view(principal, run):
            raise InvalidRequest(f"{field}: no visible run {run_id}")
        _check_run(run, factory, agents, field)
        _check_pair(scorer, run, field)
        runs.append(run)
    return [await _queue(conn, principal, factory, scorer, run) for run in runs]


async def dispatch_run(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    run_id: str,
    scorer_uids: list[str],
) -> list[DispatchResult]:
    """POST /factory/{factory_uid}/runs/{run_id}/scorer_dispatch."""
    require_manage_access(principal, factory)
    _check_uuids(scorer_uids, "scorer_uids")
    run = await visible_run(conn, principal, run_id)
    if run.factory_uid != factory.uid:
        raise NotFound(f"run_id: {run_id} is not a run of this factory")
    _check_run(run, factory, await factory_agents(conn, factory), "run_id")
    scorers = []
    for i, scorer_uid in enumerate(scorer_uids):
        field = f"scorer_uids[{i}]"
        scorer = await find_scorer(conn, scorer_uid)
        if scorer is None or scorer.factory_uid != factory.uid:
            raise InvalidRequest(f"{field}: no scorer {scorer_uid} in this factory")
        _check_scorer(scorer, field)
        _check_pair(scorer, run, field)
        scorers.append(scorer)
    return [await _queue(conn, principal, factory, scorer, run) for scorer in scorers]


async def factory_agents(conn: AsyncConnection, factory: Factory) -> set[str]:
    """The agents that execute the factory's work: its foreman and the agents linked to it."""
    a = t.agents
    query = select(a.c.uid).where(a.c.factory_uid == factory.uid, a.c.team_uid == factory.team_uid)
    linked = set((await conn.execute(query)).scalars())
    return linked | ({factory.foreman_agent_uid} if factory.foreman_agent_uid else set())


def _check_uuids(values: list[str], field: str) -> None:
    for i, value in enumerate(values):
        if value == NIL_UUID:
            raise InvalidRequest(f"{field}[{i}]: the nil UUID names nothing")
        if value in values[:i]:
            raise InvalidRequest(f"{field}[{i}]: {value} is listed twice")


def _check_run(run: ScorableRun, factory: Factory, agents: set[str], field: str) -> None:
    if run.factory_uid != factory.uid or run.team_uid != factory.team_uid:
        raise InvalidRequest(f"{field}: run {run.run_id} is not a run of this factory and team")
    if run.source == SCORING_SOURCE:
        raise InvalidRequest(f"{field}: run {run.run_id} is a scoring job; it cannot be scored")
    if run.started_at is None and run.session_id is None:
        raise InvalidRequest(f"{field}: run {run.run_id} has no conversation to score yet")
    if run.agent_uid is None or run.agent_uid not in agents:
        raise InvalidRequest(f"{field}: run {run.run_id} was not executed by a factory agent")


def _check_scorer(scorer: Scorer, field: str) -> None:
    if scorer.benchmark_managed:
        raise InvalidRequest(
            f"{field}: scorer {scorer.uid} is managed by a benchmark suite; dispatch it there"
        )


def _check_pair(scorer: Scorer, run: ScorableRun, field: str) -> None:
    if not scores_agent(scorer, run.agent_uid):
        raise InvalidRequest(
            f"{field}: scorer {scorer.uid} is not configured for agent {run.agent_uid}, which "
            f"executed run {run.run_id}"
        )


async def _queue(
    conn: AsyncConnection,
    principal: Principal,
    factory: Factory,
    scorer: Scorer,
    run: ScorableRun,
) -> DispatchResult:
    """A QUEUED job for the pair, or the one queued before (the unique index decides races)."""
    existing = await _queued_job(conn, scorer.uid, run.run_id)
    if existing is None:
        job_id = ids.new_uuid()
        job = insert(j).values(
            job_id=job_id,
            scorer_uid=scorer.uid,
            scorer_version=scorer.version,
            run_id=run.run_id,
            factory_uid=factory.uid,
            status="queued",
            trigger="manual",
            requested_by_uid=principal.uid,
            created_at=utcnow(),
        )
        try:
            async with conn.begin_nested():
                await conn.execute(job)
            return DispatchResult(run.run_id, scorer.uid, job_id, "queued", None)
        except IntegrityError:
            existing = await _queued_job(conn, scorer.uid, run.run_id)
            if existing is None:
                raise
    return DispatchResult(
        run.run_id,
        scorer.uid,
        existing,
        "already_queued",
        "a scoring job for this run and scorer is queued already; none was added",
    )


async def _queued_job(conn: AsyncConnection, scorer_uid: str, run_id: str) -> str | None:
    query = select(j.c.job_id).where(
        j.c.scorer_uid == scorer_uid, j.c.run_id == run_id, j.c.status == "queued"
    )
    job_id: str | None = (await conn.execute(query)).scalar()
    return job_id
