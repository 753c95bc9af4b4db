"""The shapes of scorers, their dispatch and what scoring jobs found: what a caller asks for,
and what every reader sees. The API decodes requests into them, the rules take and return them,
and the OpenAPI document is made from them."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal
from uuid import UUID

from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Cursor, Limit, Timestamp
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.store.rows import from_row
from gateway.platform.analytics.window import Period
from gateway.platform.runners.models import Uid

MAX_JOBS = 50  # a runner claims at most this many scoring jobs at once
ScopeMode = Literal["all_agents", "selected_agents"]
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
AgentUid = Annotated[str, Meta(min_length=1, max_length=64)]
Selection = Annotated[list[UUID], Meta(min_length=1, max_length=100)]


# --- scorers -----------------------------------------------------------------------------------


class ScorerCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    prompt: Annotated[
        str, Meta(min_length=1, max_length=100_000, pattern=r"\S", description="what to judge")
    ]
    scope_mode: ScopeMode = "all_agents"
    agent_uids: (
        Annotated[
            list[AgentUid], Meta(max_length=100, description="with selected_agents: 1 or more")
        ]
        | None
    ) = None
    active: Annotated[
        bool,
        Meta(
            description="a scorer of a factory's files with a sampling rate scores a sample of "
            "completed runs on its own (docs/factory-files.md#scorers); one made here is "
            "dispatched by hand"
        ),
    ] = True
    self_improvement_enabled: bool = False


class ScorerUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Only the fields given change; `factory_uid` cannot (a 400 names it)."""

    name: Name | UnsetType = UNSET
    prompt: Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")] | UnsetType = (
        UNSET
    )
    scope_mode: ScopeMode | UnsetType = UNSET
    agent_uids: Annotated[list[AgentUid], Meta(max_length=100)] | UnsetType | None = UNSET
    active: bool | UnsetType = UNSET
    self_improvement_enabled: bool | UnsetType = UNSET


class Scorer(Struct, kw_only=True):
    uid: Annotated[str, Meta(description="a UUID")]
    factory_uid: str
    name: str
    prompt: str
    scope_mode: ScopeMode
    agent_uids: list[str]
    active: bool
    self_improvement_enabled: bool
    benchmark_managed: Annotated[bool, Meta(description="owned by a benchmark suite")]
    version: int
    created_at: Timestamp
    updated_at: Timestamp
    # a scorer of the factory's files: what its file says (absent for one made here)
    model_id: Annotated[str, Meta(description="the judge model (file)")] | UnsetType = UNSET
    labels: (
        Annotated[list[ScorerLabel], Meta(description="the classification's labels (file)")]
        | UnsetType
    ) = UNSET
    passing_score: (
        Annotated[float, Meta(description="a score at or above it passes (file)")] | UnsetType
    ) = UNSET
    sampling_rate: (
        Annotated[
            float,
            Meta(description="percent of completed runs sampled for scoring on their own (file)"),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def from_row(cls, row: Row[Any]) -> Scorer:
        return from_row(
            cls,
            row,
            agent_uids=row.agent_uids or [],
            model_id=_given(row.model_id),
            labels=_given(row.labels),
            passing_score=_given(row.passing_score),
            sampling_rate=_given(row.sampling_rate),
        )


def _given(value: Any) -> Any:
    return UNSET if value is None else value


class ScorerLabel(Struct, kw_only=True, omit_defaults=True):
    value: str
    score: Annotated[float, Meta(ge=0, le=1)]
    description: str | UnsetType = UNSET


class ScorerList(Struct):
    scorers: list[Scorer]


# --- manual dispatch ---------------------------------------------------------------------------


class RunSelection(Struct, forbid_unknown_fields=True):
    run_ids: Annotated[Selection, Meta(description="1 to 100 distinct, nonzero run ids")]


class ScorerSelection(Struct, forbid_unknown_fields=True):
    scorer_uids: Annotated[Selection, Meta(description="1 to 100 distinct, nonzero scorer uids")]


class DispatchResult(Struct):
    run_id: str
    scorer_uid: str
    job_id: Annotated[str, Meta(description="the queued scoring job")]
    status: Literal["queued", "already_queued"]
    error: Annotated[str | None, Meta(description="why no job was added; null when one was")]


class DispatchResults(Struct):
    results: Annotated[list[DispatchResult], Meta(description="one per pair, in request order")]


# --- runners execute scoring jobs --------------------------------------------------------------


class JobClaim(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    max_jobs: Annotated[int, Meta(ge=1, le=MAX_JOBS)] = 1


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
    trigger: Annotated[
        Literal["manual", "sampled"],
        Meta(description="dispatched by hand, or a completed run sampled by the scorer"),
    ] = "manual"
    model_id: Annotated[str, Meta(description="the judge model (a file scorer)")] | UnsetType = (
        UNSET
    )
    labels: (
        Annotated[
            list[ScorerLabel],
            Meta(description="answer one of them: the outcome's `label` (a file scorer)"),
        ]
        | UnsetType
    ) = UNSET
    passing_score: Annotated[float, Meta(description="(a file scorer)")] | UnsetType = UNSET

    @classmethod
    def from_row(cls, row: Row[Any]) -> ClaimedJob:
        """A row of the job joined with its scorer and its run (`run_prompt`)."""
        run = from_row(JudgedRun, row, prompt=row.run_prompt)
        return from_row(
            cls,
            row,
            scorer_name=row.name,
            run=run,
            model_id=_given(row.model_id),
            labels=_given(row.labels),
            passing_score=_given(row.passing_score),
        )


class ClaimedJobs(Struct):
    jobs: Annotated[list[ClaimedJob], Meta(description="empty when none is queued")]


class JobOutcome(Struct, kw_only=True, forbid_unknown_fields=True):
    runner_uid: Uid
    score: Annotated[float, Meta(ge=0, le=1)] | None = None
    label: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=200,
                description="one of the scorer's labels: its score is the attempt's (with "
                "no `score`), or it must be the label `score` falls in",
            ),
        ]
        | None
    ) = None
    reasoning: Annotated[str, Meta(max_length=100_000)] | None = None
    error: Annotated[str, Meta(min_length=1, max_length=10_000)] | None = None

    def __post_init__(self) -> None:
        judged = self.score is not None or self.label is not None
        if judged == (self.error is not None):
            raise ValueError("score: give a score (or a label), or an error, not both")


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
    label: Annotated[str | None, Meta(description="the scorer's label the score falls in")] = None
    passed: Annotated[
        bool | None, Meta(description="the score reached the scorer's passing score")
    ] = None

    @classmethod
    def from_row(cls, row: Row[Any], *, with_reasoning: bool) -> Attempt:
        return from_row(cls, row, reasoning=row.reasoning if with_reasoning else UNSET)


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
    label: Annotated[
        str | None, Meta(description="the scorer's label the score falls in (null: no labels)")
    ] = None
    passed: Annotated[
        bool | None,
        Meta(description="the score reached the scorer's passing score (null: it has none)"),
    ] = None

    @classmethod
    def from_row(cls, row: Row[Any]) -> RunScore:
        """A row of the attempt joined with its scorer's `name`."""
        return from_row(cls, row, scorer_name=row.name)


class RunScores(Struct):
    run_id: str
    scores: Annotated[list[RunScore], Meta(description="the newest scored attempt per scorer")]
