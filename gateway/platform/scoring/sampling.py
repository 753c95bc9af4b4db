"""Scoring on its own: a run a runner completes (SUCCEEDED or FAILED) is scored by each
enabled scorer of its factory's files (the run's factory, or its agent's) that is configured
for the run's agent and samples it
(docs/factory-files.md#scorers). The scorer's `samplingRate` (percent, factory-format.md §3.5)
decides, deterministically, by the run's id: the run's bucket is the first 8 hex digits of the
SHA-256 of its id, as a number, modulo 10,000, and a rate of r percent samples the buckets below
r x 100. So the same run is always sampled or always not, at 100 every run is and at 0.01 one in
10,000. A sampled run gets a QUEUED scoring job (trigger `sampled`) that a runner claims like a
dispatched one; a run is sampled once per scorer, however often follow-ups finish it again.

Called by the runner protocol's finish, in its transaction (gateway.composition.wiring hands it
over: runners sit below scoring), with the runs it completed."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.platform.scoring.dispatch import SCORING_SOURCE

log = logging.getLogger("gateway.scoring")
BUCKETS = 10_000  # a rate's resolution: 0.01 percent
COMPLETED = frozenset({"SUCCEEDED", "FAILED"})
TRIGGER = "sampled"


def bucket(run_id: str) -> int:
    """The run's sampling bucket, 0 to 9,999."""
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % BUCKETS


def sampled(run_id: str, rate_percent: float) -> bool:
    """Whether a scorer sampling `rate_percent` percent of runs samples this one."""
    return bucket(run_id) < round(rate_percent * BUCKETS / 100)


async def queue_sampled(conn: AsyncConnection, runs: Sequence[Any]) -> None:
    """A scoring job for each (sampling scorer, completed run) pair; `runs` have run_id,
    factory_uid, agent_uid, source and state (RunRecord)."""
    scorable = [
        run
        for run in runs
        if run.state in COMPLETED and run.source != SCORING_SOURCE and run.agent_uid is not None
    ]
    if not scorable:
        return
    homes = await _factories(conn, scorable)
    sc = t.scorers
    query = select(
        *(sc.c.uid, sc.c.factory_uid, sc.c.version, sc.c.scope_mode, sc.c.agent_uids),
        sc.c.sampling_rate,
    ).where(
        sc.c.factory_uid.in_(sorted(set().union(*homes.values()))),
        sc.c.active.is_(True),
        sc.c.benchmark_managed.is_(False),
        sc.c.sampling_rate.is_not(None),
    )
    scorers = list(await conn.execute(query))
    pairs = [
        (scorer, run)
        for run in scorable
        for scorer in scorers
        if scorer.factory_uid in homes[run.run_id]
        and _scores(scorer, run.agent_uid)
        and sampled(run.run_id, scorer.sampling_rate)
    ]
    if not pairs:
        return
    j = t.scoring_jobs
    # sampled before, or queued by hand already (one queued job per pair)
    done = select(j.c.scorer_uid, j.c.run_id).where(
        j.c.run_id.in_(sorted({run.run_id for _, run in pairs})),
        or_(j.c.trigger == TRIGGER, j.c.status == "queued"),
    )
    before = {(row.scorer_uid, row.run_id) for row in await conn.execute(done)}
    now = utcnow()
    rows = [
        {
            "job_id": ids.new_uuid(),
            "scorer_uid": scorer.uid,
            "scorer_version": scorer.version,
            "run_id": run.run_id,
            "factory_uid": scorer.factory_uid,
            "status": "queued",
            "trigger": TRIGGER,
            "requested_by_uid": None,
            "created_at": now,
        }
        for scorer, run in pairs
        if (scorer.uid, run.run_id) not in before
    ]
    if rows:
        try:
            async with conn.begin_nested():
                await conn.execute(insert(j), rows)
        except IntegrityError:  # a dispatch queued one of the pairs meanwhile: it stands
            log.info("sampled scoring jobs of %d runs not queued: dispatched meanwhile", len(rows))


async def _factories(conn: AsyncConnection, runs: Sequence[Any]) -> dict[str, set[str]]:
    """Run id -> the factories whose scorers may score it: the run's own, and its agent's (a
    run a caller started for a factory's agent by agent_identity_uid belongs to no factory)."""
    a = t.agents
    query = select(a.c.uid, a.c.factory_uid).where(
        a.c.uid.in_(sorted({run.agent_uid for run in runs})), a.c.factory_uid.is_not(None)
    )
    of_agent = {row.uid: row.factory_uid for row in await conn.execute(query)}
    return {
        run.run_id: {f for f in (run.factory_uid, of_agent.get(run.agent_uid)) if f is not None}
        for run in runs
    }


def _scores(scorer: Any, agent_uid: str) -> bool:
    return scorer.scope_mode == "all_agents" or agent_uid in (scorer.agent_uids or [])
