"""Scoring jobs executed by runners, and what they found (spec 4.9, scorers): runners claim
queued jobs and report each outcome; a scorer's results and metrics, a run's current scores.
docs/api.md, "Scorers"."""

from __future__ import annotations

from starlette.requests import Request

from gateway.foundation.accounts.factories import get_accessible_factory
from gateway.foundation.api.auth import cursors_of, principal_of, services_of
from gateway.foundation.api.pagination import page_info
from gateway.foundation.api.routing import Body, Query, Routes
from gateway.kernel.errors import InvalidRequest
from gateway.platform.analytics.models import MetricsRange
from gateway.platform.analytics.params import (
    ERRORS,
    RATE_LIMITED,
    RATE_LIMITED_TYPE,
    metered_factory,
    range_of,
)
from gateway.platform.runners.routes import AGENT_ONLY, as_runner
from gateway.platform.runs.record.store import visible_run
from gateway.platform.scoring import results as scoring
from gateway.platform.scoring.models import (
    Attempt,
    ClaimedJobs,
    JobClaim,
    JobOutcome,
    ResultList,
    ResultsQuery,
    RunScores,
    ScorerMetrics,
)
from gateway.platform.scoring.scorers import get_scorer

routes = Routes("scorers")
SCORER = "/factory/{uid}/scorers/{scorer_uid}"


# --- runners execute scoring jobs -------------------------------------------------------------


@routes.post(
    "/runner/scoring-jobs/claim",
    "Claim queued scoring jobs",
    response=ClaimedJobs,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Queued jobs of the runner's team (and factory), oldest first; a job claimed longer "
    "ago than the run lease and not reported may be claimed again.",
)
async def claim_endpoint(request: Request, body: Body[JobClaim]) -> ClaimedJobs:
    principal = await principal_of(request)
    ask = await body.read()
    lease_s = services_of(request).settings.run_lease_s
    async with as_runner(request, principal, ask.runner_uid) as (conn, runner):
        return ClaimedJobs(await scoring.claim_jobs(conn, runner, lease_s, ask.max_jobs))


@routes.post(
    "/runner/scoring-jobs/{job_id}/outcome",
    "Report a scoring job's outcome",
    ok=201,
    response=Attempt,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(AGENT_ONLY, (409, "`job_not_held`: reported already, or claimed by another")),
    notes="A `score` from 0 to 1 (with `reasoning`), a `label` of the scorer's (its score is "
    "the attempt's), or an `error`: one attempt each. The attempt's `label` and `passed` come "
    "from the scorer's labels and passing score.",
)
async def outcome_endpoint(request: Request, body: Body[JobOutcome]) -> Attempt:
    principal = await principal_of(request)
    outcome = await body.read()
    async with as_runner(request, principal, outcome.runner_uid) as (conn, runner):
        return await scoring.record_outcome(
            conn,
            runner,
            request.path_params["job_id"],
            score=outcome.score,
            reasoning=outcome.reasoning,
            error=outcome.error,
            label=outcome.label,
        )


# --- what they found ---------------------------------------------------------------------------


@routes.get(
    SCORER + "/results",
    "A scorer's results, newest first",
    response=ResultList,
    notes="Keyset pages over (attempted_at, attempt id). With `run_id` (repeatable), every "
    "attempt on those runs at once: no `cursor` then.",
)
async def results_endpoint(request: Request, query: Query[ResultsQuery]) -> ResultList:
    principal = await principal_of(request)
    params = query.read()
    if params.run_id and params.cursor is not None:
        raise InvalidRequest("cursor: not with run_id (those results are not paginated)")
    scorer_uid = request.path_params["scorer_uid"]
    scope = f"scorer-results:{scorer_uid}"
    cursors = cursors_of(request)
    after = cursors.decode_keyset(scope, params.cursor)
    async with services_of(request).database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
        await get_scorer(conn, factory, scorer_uid)
        found, more = await scoring.results(
            conn,
            scorer_uid,
            after=after,
            limit=params.limit,
            run_ids=params.run_id or None,
            with_reasoning=params.include_reasons,
        )
    cursor = None
    if more:
        cursor = cursors.encode_keyset(scope, found[-1].attempted_at, found[-1].attempt_id)
    return ResultList(found, page_info(cursor))


@routes.get(
    SCORER + "/metrics",
    "A scorer's metrics over a date range",
    response=ScorerMetrics,
    errors=ERRORS,
    problem_types=RATE_LIMITED_TYPE,
    problems=(RATE_LIMITED,),
    notes="Attempts in [start_date, end_date) (default: the last 30 days): how many, scored or "
    "failed, the mean score; with group_by_period, per period too (at most 365).",
)
async def metrics_endpoint(request: Request, query: Query[MetricsRange]) -> ScorerMetrics:
    factory = await metered_factory(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    scorer_uid = request.path_params["scorer_uid"]
    async with services_of(request).database.read() as conn:
        await get_scorer(conn, factory, scorer_uid)
        return await scoring.metrics(conn, scorer_uid, w)


@routes.get(
    "/agent/runs/{run_id}/scores",
    "A run's current scores",
    response=RunScores,
    notes="View access to the run suffices.",
)
async def run_scores_endpoint(request: Request) -> RunScores:
    principal = await principal_of(request)
    run_id = request.path_params["run_id"]
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, run_id)
        return RunScores(run.run_id, await scoring.run_scores(conn, run.run_id))
