"""The tree's runner configurations, scorers and benchmark suites, written.

A file scorer scores the runs of the agents it names (scope `selected_agents`). A file suite's
trials run as its agent, with one configuration named after that agent and no model of its own
(the agent's applies), one attempt per task; its tasks are the files under tasks/, in the order
suite.yaml lists them."""

from __future__ import annotations

from sqlalchemy import delete, update

from factory_format import BenchmarkSuite, BenchmarkTask, Runner, Scorer
from gateway.foundation.store import tables as t
from gateway.kernel import ids
from gateway.kernel.types import JsonObject
from gateway.platform.factory_files.state import task_rows
from gateway.platform.factory_files.writing import Columns, Writing
from gateway.platform.scoring.scorers import remove_scorer
from gateway.webhook_gateway.automations.models import json_form


class RunnerColumns(Columns, kw_only=True):
    name: str
    description: str | None
    setup_commands: list[str]
    instance_shape: JsonObject | None
    platform: JsonObject


def _runner_columns(runner: Runner) -> RunnerColumns:
    return RunnerColumns(
        name=runner.name,
        description=runner.description,
        setup_commands=list(runner.setup_commands),
        instance_shape=json_form(runner.instance_shape),
        platform=json_form(runner.platform),
    )


async def create_runner(w: Writing, runner: Runner) -> None:
    columns = _runner_columns(runner)
    await w.insert_row(t.factory_runners, ids.new_id("rcfg"), columns, factory_uid=w.factory_uid)


async def update_runner(w: Writing, uid: str, runner: Runner) -> None:
    await w.update_row(t.factory_runners, uid, _runner_columns(runner))


async def delete_runner(w: Writing, uid: str) -> None:
    await w.conn.execute(delete(t.factory_runners).where(t.factory_runners.c.uid == uid))


class ScorerColumns(Columns, kw_only=True):
    name: str
    prompt: str
    scope_mode: str
    agent_uids: list[str]
    active: bool
    self_improvement_enabled: bool
    definition_name: str
    description: str | None
    model_id: str
    labels: list[JsonObject]
    passing_score: float
    sampling_rate: float
    output: str


def _scorer_columns(w: Writing, scorer: Scorer) -> ScorerColumns:
    return ScorerColumns(
        name=scorer.name,
        prompt=scorer.rubric,
        scope_mode="selected_agents",
        agent_uids=[w.agent_uid(name) for name in scorer.agents],
        active=scorer.enabled,
        self_improvement_enabled=scorer.self_improvement,
        definition_name=scorer.name,
        description=scorer.description,
        model_id=scorer.model,
        labels=json_form(scorer.labels),
        passing_score=scorer.passing_score,
        sampling_rate=scorer.sampling_rate,
        output=scorer.output,
    )


async def create_scorer(w: Writing, scorer: Scorer) -> None:
    await w.insert_row(
        t.scorers,
        ids.new_uuid(),
        _scorer_columns(w, scorer),
        factory_uid=w.factory_uid,
        benchmark_managed=False,
        version=1,
        created_by_uid=w.creator_uid,
    )


async def update_scorer(w: Writing, uid: str, scorer: Scorer) -> None:
    columns = _scorer_columns(w, scorer)
    await w.update_row(t.scorers, uid, columns, version=t.scorers.c.version + 1)


async def delete_scorer(w: Writing, uid: str) -> None:
    await remove_scorer(w.conn, uid)


class SuiteColumns(Columns, kw_only=True):
    name: str
    description: str | None
    configurations: list[JsonObject]
    definition_name: str
    agent_uid: str


def _suite_columns(w: Writing, suite: BenchmarkSuite) -> SuiteColumns:
    return SuiteColumns(
        name=suite.name,
        description=suite.description,
        configurations=[{"name": suite.agent, "attempts": 1}],
        definition_name=suite.slug,
        agent_uid=w.agent_uid(suite.agent),
    )


async def create_suite(w: Writing, suite: BenchmarkSuite) -> None:
    uid = ids.new_uuid()
    await w.insert_row(
        t.benchmark_suites,
        uid,
        _suite_columns(w, suite),
        factory_uid=w.factory_uid,
        created_by_uid=w.creator_uid,
    )
    await _write_tasks(w, uid, suite.tasks)


async def update_suite(w: Writing, uid: str, suite: BenchmarkSuite) -> None:
    await w.update_row(t.benchmark_suites, uid, _suite_columns(w, suite))
    await _write_tasks(w, uid, suite.tasks)


async def delete_suite(w: Writing, uid: str) -> None:
    """Suites are kept deleted (their runs refer to them), as the API deletes them."""
    s = t.benchmark_suites
    await w.conn.execute(update(s).where(s.c.uid == uid).values(deleted_at=w.now, updated_at=w.now))


class TaskColumns(Columns, kw_only=True):
    title: str
    prompt: str
    success_criteria: str
    source_run_id: str | None
    starting_repo_refs: list[str] | None
    slug: str
    position: int


def _task_columns(task: BenchmarkTask, position: int) -> TaskColumns:
    return TaskColumns(
        title=task.title,
        prompt=task.prompt,
        success_criteria=task.success_criteria,
        source_run_id=task.source_run_id,
        starting_repo_refs=list(task.starting_repo_refs) or None,
        slug=task.slug,
        position=position,
    )


async def _write_tasks(w: Writing, suite_uid: str, tasks: tuple[BenchmarkTask, ...]) -> None:
    """The file tasks of the suite made to match `tasks` by slug (task uids stay: trials refer
    to them); tasks the API added are left alone (a title of theirs that a file task takes is
    a diagnostic before anything is written)."""
    k = t.benchmark_tasks
    rows = await task_rows(w.conn, suite_uid)
    by_slug = {row.slug: row for row in rows if row.slug is not None}
    wanted = {task.slug for task in tasks}
    for slug, row in by_slug.items():
        if slug not in wanted:
            await w.conn.execute(delete(k).where(k.c.uid == row.uid))
    for row in by_slug.values():  # titles move out of the way first: they may swap
        if row.slug in wanted:
            await w.conn.execute(update(k).where(k.c.uid == row.uid).values(title=row.uid))
    for position, task in enumerate(tasks):
        existing = by_slug.get(task.slug)
        if existing is None:
            columns = _task_columns(task, position)
            await w.insert_row(k, ids.new_uuid(), columns, suite_uid=suite_uid)
        else:
            await w.update_row(k, existing.uid, _task_columns(task, position))
