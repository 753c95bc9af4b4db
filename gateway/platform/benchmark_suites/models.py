"""The shapes of benchmark suites, their tasks, runs and trials: what a caller asks for, and
what every reader sees. The API decodes requests into them, the rules take and return them, and
the OpenAPI document is made from them (docs/api.md, "Benchmark suites")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from sqlalchemy import Row

from gateway.foundation.api.fields import Cursor, Limit, Timestamp
from gateway.foundation.api.pagination import PageInfo
from gateway.foundation.store.rows import from_row
from gateway.platform.runs.record.models import RunItem, StatusMessage

RunStatus = Literal["running", "completed", "cancelled"]
RunDetail = Literal["launch_settings", "aggregate_results", "creator_name"]
TrialDetail = Literal["results", "details"]

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\S")]
Text = Annotated[str, Meta(min_length=1, max_length=100_000, pattern=r"\S")]
Refs = Annotated[list[Annotated[str, Meta(min_length=1, max_length=500)]], Meta(max_length=20)]
Tags = Annotated[list[Annotated[str, Meta(min_length=1, max_length=64)]], Meta(max_length=20)]


class Configuration(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=100, pattern=r"\S")]
    model_id: Annotated[str, Meta(description="an enabled model of /agent/models")] | None = None
    attempts: Annotated[int, Meta(ge=1, le=10)] = 1


Configurations = Annotated[list[Configuration], Meta(min_length=1, max_length=20)]


class SuiteCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name
    description: Annotated[str, Meta(max_length=10_000)] | None = None
    configurations: Configurations


class SuiteUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    description: Annotated[str, Meta(max_length=10_000)] | UnsetType | None = UNSET
    configurations: Configurations | UnsetType = UNSET


class SuiteTaskCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    title: Name
    prompt: Text
    success_criteria: Text
    source_run_id: Annotated[str, Meta(min_length=1, max_length=64)] | None = None
    starting_repo_refs: Refs | None = None
    tags: Tags | None = None


class TaskUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Omitted fields are kept. Null or blank title, prompt or success_criteria: 400."""

    title: str | UnsetType | None = UNSET
    prompt: str | UnsetType | None = UNSET
    success_criteria: str | UnsetType | None = UNSET
    source_run_id: Annotated[str, Meta(max_length=64)] | UnsetType | None = UNSET
    starting_repo_refs: Refs | UnsetType | None = UNSET
    tags: Tags | UnsetType | None = UNSET


class SuiteTask(Struct, kw_only=True):
    uid: str
    suite_uid: str
    title: str
    prompt: str
    success_criteria: str
    source_run_id: str | None
    starting_repo_refs: list[str]
    tags: list[str]
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def from_row(cls, row: Row[Any]) -> SuiteTask:
        return from_row(
            cls, row, starting_repo_refs=row.starting_repo_refs or [], tags=row.tags or []
        )


class ConfigurationOut(Struct, kw_only=True):
    name: str
    model_id: str | None = None
    attempts: int = 1


def stored_configurations(stored: Any) -> list[ConfigurationOut]:
    """Configurations as a JSON column holds them."""
    return msgspec.convert(stored, list[ConfigurationOut])


class Suite(Struct, kw_only=True):
    uid: str
    factory_uid: str
    name: str
    description: str | None
    configurations: list[ConfigurationOut]
    created_at: Timestamp
    updated_at: Timestamp
    tasks: Annotated[list[SuiteTask], Meta(description="GET of one suite")] | UnsetType = UNSET
    agent_uid: (
        Annotated[
            str,
            Meta(description="the agent its trials run as (its definition file's `agent`)"),
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def from_row(cls, row: Row[Any], tasks: list[SuiteTask] | UnsetType = UNSET) -> Suite:
        return from_row(cls, row, tasks=tasks, agent_uid=row.agent_uid or UNSET)


class SuiteList(Struct):
    suites: list[Suite]


class Aggregate(Struct, kw_only=True):
    trials: int
    succeeded: int
    failed: int
    cancelled: int
    running: int


class BenchmarkRun(Struct, kw_only=True):
    uid: str
    suite_uid: str
    factory_uid: str
    status: RunStatus
    trials: int
    created_at: Timestamp
    cancelled_at: Timestamp | None
    launch_settings: (
        Annotated[list[ConfigurationOut], Meta(description="include=launch_settings")] | UnsetType
    ) = UNSET
    aggregate_results: (
        Annotated[Aggregate, Meta(description="include=aggregate_results")] | UnsetType
    ) = UNSET
    creator_name: Annotated[str | None, Meta(description="include=creator_name")] | UnsetType = (
        UNSET
    )


class RunPage(Struct):
    data: list[BenchmarkRun]
    page_info: PageInfo


class ConfigurationResult(Struct, kw_only=True):
    configuration: str
    trials: int
    succeeded: int
    failed: int
    cancelled: int
    running: int
    pass_rate: Annotated[float | None, Meta(description="succeeded / finished, not cancelled")]
    mean_duration_s: float | None
    cost_usd: float
    outcomes: list[str] | UnsetType = UNSET
    durations_s: list[float | None] | UnsetType = UNSET
    costs_usd: list[float] | UnsetType = UNSET


class Results(Struct):
    benchmark_run_uid: str
    status: RunStatus
    configurations: Annotated[
        list[ConfigurationResult], Meta(description="include=metrics adds per-trial arrays")
    ]


class TrialResults(Struct, kw_only=True):
    """How one trial went: its agent run's outcome, duration, cost and status message."""

    outcome: str
    duration_s: float | None
    cost_usd: float
    status_message: StatusMessage | None


class Trial(Struct, kw_only=True):
    uid: str
    benchmark_run_uid: str
    task_uid: str
    task_title: str
    configuration: str
    attempt_number: int
    agent_run_id: str
    state: str
    created_at: Timestamp
    results: Annotated[TrialResults, Meta(description="include=results")] | UnsetType = UNSET
    details: Annotated[RunItem, Meta(description="include=details: the agent run")] | UnsetType = (
        UNSET
    )


class TrialPage(Struct, kw_only=True):
    data: list[Trial]
    page_info: PageInfo | UnsetType = UNSET
    matched_attempt_number: (
        Annotated[int | None, Meta(description="with agent_run_id")] | UnsetType
    ) = UNSET


class RunListQuery(Struct, kw_only=True):
    limit: Limit = 20
    cursor: Cursor | None = None
    include: list[RunDetail] = []


class BenchmarkResultsQuery(Struct, kw_only=True):
    include: list[Literal["metrics"]] = []


class TrialQuery(Struct, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100)] | None = None
    cursor: Cursor | None = None
    agent_run_id: str | None = None
    configuration: str | None = None
    task_uid: str | None = None


class TrialOneQuery(Struct, kw_only=True):
    include: list[TrialDetail] = []
