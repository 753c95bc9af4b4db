"""Scoring jobs executed, and what they found (spec 4.9, scorers).

A runner of the factory's team claims queued jobs (`claim_jobs`: each comes with the scorer's
prompt and the run to judge; a claim older than the run lease may be taken again) and reports
each job's outcome (`record_outcome`): a score from 0 to 1 with its reasoning, or an error. Each
report is an attempt. Read back: a scorer's results (newest first), its metrics over a date
range, and a run's current scores (the newest scored attempt of each scorer).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import belongs_to_team
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Conflict, NotFound
from gateway.platform.analytics.window import Window, period_key
from gateway.platform.runners.registry import Runner
from gateway.platform.scoring.judgement import judge
from gateway.platform.scoring.models import MAX_JOBS, Attempt, ClaimedJob, RunScore, ScorerMetrics

j, a = t.scoring_jobs, t.scoring_attempts


class JobNotHeld(Conflict):
    code, title = "job_not_held", "This runner does not hold the scoring job"


async def claim_jobs(
    conn: AsyncConnection, runner: Runner, lease_s: float, limit: int
) -> list[ClaimedJob]:
    """Up to `limit` queued jobs of the runner's team (and factory), oldest first."""
    now = utcnow()
    factories = select(t.factories.c.uid).where(t.factories.c.team_uid == runner.team_uid)
    if runner.factory_uid is not None:
        factories = factories.where(t.factories.c.uid == runner.factory_uid)
    takeable = or_(
        j.c.status == "queued",
        and_(j.c.status == "claimed", j.c.claimed_at < now - timedelta(seconds=lease_s)),
    )
    pick = (
        select(j.c.job_id)
        .where(j.c.factory_uid.in_(factories), takeable)
        .order_by(j.c.created_at, j.c.job_id)
        .limit(max(1, min(limit, MAX_JOBS)))
        .with_for_update(skip_locked=True)
    )
    job_ids = list((await conn.execute(pick)).scalars())
    if not job_ids:
        return []
    await conn.execute(
        update(j)
        .where(j.c.job_id.in_(job_ids), takeable)
        .values(status="claimed", runner_uid=runner.uid, claimed_at=now)
    )
    sc, r = t.scorers, t.runs
    query = (
        select(j.c.job_id, j.c.scorer_version, j.c.run_id, j.c.factory_uid, j.c.created_at)
        .add_columns(j.c.trigger, sc.c.uid.label("scorer_uid"), sc.c.name, sc.c.prompt)
        .add_columns(sc.c.model_id, sc.c.labels, sc.c.passing_score)
        .add_columns(r.c.title, r.c.prompt.label("run_prompt"), r.c.conversation_id)
        .add_columns(r.c.session_link, r.c.state)
        .join(sc, sc.c.uid == j.c.scorer_uid)
        .join(r, r.c.run_id == j.c.run_id)
        .where(j.c.job_id.in_(job_ids), j.c.runner_uid == runner.uid)
        .order_by(j.c.created_at, j.c.job_id)
    )
    return [ClaimedJob.from_row(row) for row in await conn.execute(query)]


async def record_outcome(
    conn: AsyncConnection,
    runner: Runner,
    job_id: str,
    *,
    score: float | None,
    reasoning: str | None,
    error: str | None,
    label: str | None = None,
) -> Attempt:
    """The attempt for a job this runner holds: scored (its label and verdict by the scorer's
    labels and passing score: judgement.py), or failed with `error`."""
    job = (await conn.execute(select(j).where(j.c.job_id == job_id).with_for_update())).first()
    if job is None or not await belongs_to_team(conn, job.factory_uid, runner.team_uid):
        raise NotFound(f"job_id: no scoring job {job_id} for this runner's team")
    if job.status != "claimed" or job.runner_uid != runner.uid:
        raise JobNotHeld(
            f"job_id: runner {runner.uid} does not hold job {job_id} (it is {job.status}; "
            "reported already, or claimed by another runner after the lease)"
        )
    failed = error is not None
    judged = None
    if not failed:
        sc = t.scorers
        scorer = (
            await conn.execute(
                select(sc.c.labels, sc.c.passing_score).where(sc.c.uid == job.scorer_uid)
            )
        ).one()
        judged = judge(score, label, scorer.labels, scorer.passing_score)
    attempt_id, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(a).values(
            attempt_id=attempt_id,
            job_id=job_id,
            scorer_uid=job.scorer_uid,
            scorer_version=job.scorer_version,
            run_id=job.run_id,
            factory_uid=job.factory_uid,
            status="failed" if failed else "scored",
            score=None if judged is None else judged.score,
            reasoning=None if failed else reasoning,
            error=error,
            attempted_at=now,
            label=None if judged is None else judged.label,
            passed=None if judged is None else judged.passed,
        )
    )
    await conn.execute(
        update(j).where(j.c.job_id == job_id).values(status="failed" if failed else "done")
    )
    row = (await conn.execute(select(a).where(a.c.attempt_id == attempt_id))).one()
    return Attempt.from_row(row, with_reasoning=True)


async def results(
    conn: AsyncConnection,
    scorer_uid: str,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
    run_ids: list[str] | None,
    with_reasoning: bool,
) -> tuple[list[Attempt], bool]:
    """The scorer's attempts, newest first: a page after `after` (attempted_at, attempt_id),
    and whether more follow; with `run_ids`, every attempt on those runs, unpaginated."""
    query = select(a).where(a.c.scorer_uid == scorer_uid)
    newest_first = (a.c.attempted_at.desc(), a.c.attempt_id.desc())
    if run_ids:
        query = query.where(a.c.run_id.in_(run_ids)).order_by(*newest_first)
        rows = list(await conn.execute(query))
        return [Attempt.from_row(row, with_reasoning=with_reasoning) for row in rows], False
    if after is not None:
        moment, attempt_id = after
        query = query.where(
            or_(
                a.c.attempted_at < moment,
                and_(a.c.attempted_at == moment, a.c.attempt_id < attempt_id),
            )
        )
    rows = list(await conn.execute(query.order_by(*newest_first).limit(limit + 1)))
    page = [Attempt.from_row(row, with_reasoning=with_reasoning) for row in rows[:limit]]
    return page, len(rows) > limit


async def metrics(conn: AsyncConnection, scorer_uid: str, window: Window) -> ScorerMetrics:
    """Attempts in [start, end): how many, scored or failed, the mean score; per period too."""
    query = select(a.c.attempted_at, a.c.status, a.c.score).where(
        a.c.scorer_uid == scorer_uid,
        a.c.attempted_at >= window.start,
        a.c.attempted_at < window.end,
    )
    attempts: dict[str, int] = defaultdict(int)
    sums: dict[str, float] = defaultdict(float)
    scored: dict[str, int] = defaultdict(int)
    score_sum = 0.0
    for attempted_at, status, score in await conn.execute(query):
        key = period_key(attempted_at, window.period) if window.period else ""
        attempts[key] += 1
        if status == "scored" and score is not None:
            scored[key] += 1
            sums[key] += score
            score_sum += score
    total, total_scored = sum(attempts.values()), sum(scored.values())
    found = ScorerMetrics(
        scorer_uid=scorer_uid,
        start_date=window.start,
        end_date=window.end,
        group_by_period=window.period,
        attempts=total,
        scored=total_scored,
        failed=total - total_scored,
        mean_score=_mean(score_sum, total_scored),
    )
    if window.period:
        found.period_list = window.period_list()
        found.attempts_series = window.series(attempts)
        found.mean_score_series = [_mean(sums[k], scored[k]) for k in window.periods]
    return found


def _mean(total: float, count: int) -> float | None:
    return round(total / count, 6) if count else None


async def run_scores(conn: AsyncConnection, run_id: str) -> list[RunScore]:
    """The newest scored attempt of each scorer on the run, by scorer name."""
    newest = (
        select(a.c.scorer_uid, func.max(a.c.attempted_at).label("at"))
        .where(a.c.run_id == run_id, a.c.status == "scored")
        .group_by(a.c.scorer_uid)
        .subquery()
    )
    sc = t.scorers
    query = (
        select(a, sc.c.name)
        .join(newest, and_(newest.c.scorer_uid == a.c.scorer_uid, newest.c.at == a.c.attempted_at))
        .join(sc, sc.c.uid == a.c.scorer_uid)
        .where(a.c.run_id == run_id, a.c.status == "scored")
        .order_by(sc.c.name, a.c.scorer_uid, a.c.attempt_id.desc())
    )
    found: dict[str, RunScore] = {}
    for row in await conn.execute(query):
        if row.scorer_uid not in found:  # two attempts at the same instant: the later id
            found[row.scorer_uid] = RunScore.from_row(row)
    return list(found.values())
