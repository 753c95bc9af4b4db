"""Scoring jobs executed by runners, and what they found (spec 4.9, scorers): runners claim
queued jobs and report each outcome; a scorer's results and metrics, a run's current scores.
docs/api.md, "Scorers"."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from gateway.accounts.factories import get_accessible_factory
from gateway.api.auth import cursors_of, principal_of, services_of
from gateway.api.fields import Cursor, Limit, Timestamp
from gateway.api.http import json_response
from gateway.api.pagination import PageInfo, page_info
from gateway.api.routing import Body, Query, Routes
from gateway.errors import InvalidRequest
from gateway.platform.analytics.params import (
    ERRORS,
    RATE_LIMITED,
    RATE_LIMITED_TYPE,
    MetricsRange,
    metered_factory,
    range_of,
)
from gateway.platform.analytics.window import Period
from gateway.platform.runners.models import Uid
from gateway.platform.runners.routes import AGENT_ONLY, as_runner
from gateway.platform.runs.records import visible_run
from gateway.platform.scoring import results as scoring
from gateway.platform.scoring.scorers import get_scorer

routes = Routes("scorers")
SCORER = "/factory/{uid}/scorers/{scorer_uid}"


# --- runners execute scoring jobs -------------------------------------------------------------


class JobClaim(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    max_jobs: Annotated[int, Meta(ge=1, le=scoring.MAX_JOBS)] = 1


class JudgedRun(Struct, kw_only=True):
    run_id: str
    title: str | None
    prompt: str
    state: str
    conversation_id: str
    session_link: str | None


class ClaimedJob(Struct, kw_only=True):
    job_id: str
    scorer_uid: str
    scorer_version: int
    scorer_name: str
    prompt: Annotated[str, Meta(description="the scorer's prompt: what to judge")]
    run: Annotated[JudgedRun, Meta(description="the run to judge")]


class ClaimedJobs(Struct):
    jobs: Annotated[list[ClaimedJob], Meta(description="empty when none is queued")]


class JobOutcome(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    score: Annotated[float, Meta(ge=0, le=1)] | None = None
    reasoning: Annotated[str, Meta(max_length=100_000)] | None = None
    error: Annotated[str, Meta(min_length=1, max_length=10_000)] | None = None

    def __post_init__(self) -> None:
        if (self.score is None) == (self.error is None):
            raise ValueError("score: give a score, or an error, not both")


class Attempt(Struct, kw_only=True):
    attempt_id: str
    job_id: str
    scorer_uid: str
    scorer_version: int
    run_id: str
    status: Literal["scored", "failed"]
    score: float | None
    error: str | None
    attempted_at: Timestamp
    reasoning: Annotated[str | None, Meta(description="with include_reasons")] | UnsetType = UNSET


@routes.post(
    "/runner/scoring-jobs/claim",
    "Claim queued scoring jobs",
    response=ClaimedJobs,
    errors=(400, 401, 403, 404, 413),
    problems=(AGENT_ONLY,),
    notes="Queued jobs of the runner's team (and factory), oldest first; a job claimed longer "
    "ago than the run lease and not reported may be claimed again.",
)
async def claim_endpoint(request: Request, body: Body[JobClaim]) -> Response:
    principal = await principal_of(request)
    ask = await body.read()
    lease_s = services_of(request).settings.run_lease_s
    async with as_runner(request, principal, ask.runner_uid) as (conn, runner):
        jobs = await scoring.claim_jobs(conn, runner, lease_s, ask.max_jobs)
    return json_response({"jobs": jobs})


@routes.post(
    "/runner/scoring-jobs/{job_id}/outcome",
    "Report a scoring job's outcome",
    ok=201,
    response=Attempt,
    errors=(400, 401, 403, 404, 409, 413),
    problems=(AGENT_ONLY, (409, "`job_not_held`: reported already, or claimed by another")),
    notes="A `score` from 0 to 1 (with `reasoning`), or an `error`: one attempt each.",
)
async def outcome_endpoint(request: Request, body: Body[JobOutcome]) -> Response:
    principal = await principal_of(request)
    outcome = await body.read()
    async with as_runner(request, principal, outcome.runner_uid) as (conn, runner):
        row = await scoring.record_outcome(
            conn,
            runner,
            request.path_params["job_id"],
            score=outcome.score,
            reasoning=outcome.reasoning,
            error=outcome.error,
        )
    return json_response(scoring.attempt_json(row, with_reasoning=True), 201)


# --- what they found ---------------------------------------------------------------------------


class ResultsQuery(Struct, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None
    run_id: Annotated[
        list[str], Meta(description="repeatable: every attempt on these runs, unpaginated")
    ] = []
    include_reasons: bool = False


class ResultList(Struct):
    results: list[Attempt]
    page_info: PageInfo


class ScorerMetrics(Struct, kw_only=True):
    scorer_uid: str
    start_date: Timestamp
    end_date: Timestamp
    group_by_period: Period | None
    period_list: list[date] | UnsetType = UNSET
    attempts: int
    scored: int
    failed: int
    mean_score: float | None
    attempts_series: list[int] | UnsetType = UNSET
    mean_score_series: list[float | None] | UnsetType = UNSET


class RunScore(Struct, kw_only=True):
    scorer_uid: str
    scorer_name: str
    scorer_version: int
    score: float
    reasoning: str | None
    attempt_id: str
    attempted_at: Timestamp


class RunScores(Struct):
    run_id: str
    scores: Annotated[list[RunScore], Meta(description="the newest scored attempt per scorer")]


@routes.get(
    SCORER + "/results",
    "A scorer's results, newest first",
    response=ResultList,
    notes="Keyset pages over (attempted_at, attempt id). With `run_id` (repeatable), every "
    "attempt on those runs at once: no `cursor` then.",
)
async def results_endpoint(request: Request, query: Query[ResultsQuery]) -> Response:
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
        rows, more = await scoring.results(
            conn, scorer_uid, after=after, limit=params.limit, run_ids=params.run_id or None
        )
    items = [scoring.attempt_json(row, with_reasoning=params.include_reasons) for row in rows]
    cursor = None
    if more:
        cursor = cursors.encode_keyset(scope, rows[-1].attempted_at, rows[-1].attempt_id)
    return json_response({"results": items, "page_info": page_info(cursor)})


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
async def metrics_endpoint(request: Request, query: Query[MetricsRange]) -> Response:
    factory = await metered_factory(request)
    params = query.read()
    w = range_of(params.start_date, params.end_date, params.group_by_period)
    scorer_uid = request.path_params["scorer_uid"]
    async with services_of(request).database.read() as conn:
        await get_scorer(conn, factory, scorer_uid)
        found = await scoring.metrics(conn, scorer_uid, w)
    envelope: dict[str, Any] = {
        "scorer_uid": scorer_uid,
        "start_date": w.start,
        "end_date": w.end,
        "group_by_period": w.period,
    }
    if w.period:
        envelope["period_list"] = list(w.periods)
    return json_response(envelope | found)


@routes.get(
    "/agent/runs/{run_id}/scores",
    "A run's current scores",
    response=RunScores,
    notes="View access to the run suffices.",
)
async def run_scores_endpoint(request: Request) -> Response:
    principal = await principal_of(request)
    run_id = request.path_params["run_id"]
    async with services_of(request).database.read() as conn:
        run = await visible_run(conn, principal, run_id)
        scores = await scoring.run_scores(conn, run.run_id)
    return json_response({"run_id": run.run_id, "scores": scores})
