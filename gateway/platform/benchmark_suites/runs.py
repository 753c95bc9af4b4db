"""Benchmark runs: a launch of a suite, one trial (an agent run) per task x configuration x
attempt (spec 4.9; docs/api.md, "Benchmark suites").

Launching is not idempotent: each launch makes a new run. Trials are ordinary QUEUED runs of
the factory (source BENCHMARK, executed by its foreman), so any runner of the team executes
them. A run's status follows its trials (records.status_of); cancelling a run cancels its
unfinished trials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from datetime import datetime

import msgspec
from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory, require_manage_access
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.kernel import ids
from gateway.kernel.errors import Conflict, InvalidRequest, RunPending, RunTerminal
from gateway.platform.benchmark_suites.models import (
    Aggregate,
    BenchmarkRun,
    ConfigurationOut,
    RunDetail,
    Suite,
    SuiteTask,
)
from gateway.platform.benchmark_suites.records import (
    StoredRun,
    StoredTrial,
    get_run,
    run_trials,
    status_of,
    trials,
)
from gateway.platform.benchmark_suites.suites import get_suite, suite_tasks
from gateway.platform.runs.creation.new_runs import NewRun, insert_run
from gateway.platform.runs.record import cancellation
from gateway.platform.runs.record.models import AgentConfig
from gateway.platform.runs.record.states import TERMINAL
from gateway.platform.runs.record.store import load_run

MAX_TRIALS = 500  # per launch
SOURCE = "BENCHMARK"
EVERYTHING: tuple[RunDetail, ...] = ("launch_settings", "aggregate_results", "creator_name")
b, tr = t.benchmark_runs, t.benchmark_trials


class RunNotInFlight(Conflict):
    code, title = "benchmark_run_not_in_flight", "The benchmark run already ended"


async def launch(
    conn: AsyncConnection, principal: Principal, factory: Factory, suite_uid: str
) -> BenchmarkRun:
    """The new run, with its launch settings."""
    require_manage_access(principal, factory)
    suite = await get_suite(conn, factory, suite_uid)
    tasks = await suite_tasks(conn, suite_uid)
    if not tasks:
        raise InvalidRequest("suite_uid: the suite has no task to run")
    configurations = suite.configurations
    count = len(tasks) * sum(c.attempts for c in configurations)
    if count > MAX_TRIALS:
        raise InvalidRequest(f"configurations: {count} trials; at most {MAX_TRIALS} a launch")
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(b).values(
            uid=uid,
            suite_uid=suite_uid,
            factory_uid=factory.uid,
            configurations=msgspec.to_builtins(configurations),
            created_by_uid=principal.uid,
            created_at=now,
        )
    )
    rows = []
    for task in tasks:
        for configuration in configurations:
            for attempt in range(1, configuration.attempts + 1):
                run = await insert_run(
                    conn, _trial_run(factory, principal, suite, task, configuration, uid, attempt)
                )
                rows.append(
                    {
                        "uid": ids.new_uuid(),
                        "benchmark_run_uid": uid,
                        "task_uid": task.uid,
                        "task_title": task.title,
                        "configuration": configuration.name,
                        "attempt_number": attempt,
                        "agent_run_id": run.run_id,
                        "created_at": now,
                    }
                )
    await conn.execute(insert(tr), rows)
    return await _view(conn, await get_run(conn, factory, uid), ["launch_settings"])


def _trial_run(
    factory: Factory,
    principal: Principal,
    suite: Suite,
    task: SuiteTask,
    configuration: ConfigurationOut,
    run_uid: str,
    attempt: int,
) -> NewRun:
    model = configuration.model_id
    return NewRun(
        prompt=f"{task.prompt}\n\nSuccess criteria:\n{task.success_criteria}",
        title=f"{suite.name}: {task.title} [{configuration.name}] #{attempt}"[:500],
        team_uid=factory.team_uid,
        factory_uid=factory.uid,
        creator=principal,
        source=SOURCE,
        agent_config=AgentConfig(model_id=model) if model else None,
        metadata={
            "benchmark_run_uid": run_uid,
            "benchmark_task_uid": task.uid,
            "configuration": configuration.name,
            "attempt": str(attempt),
        },
        agent_uid=suite.agent_uid or factory.foreman_agent_uid,
    )


async def read_run(conn: AsyncConnection, factory: Factory, uid: str) -> BenchmarkRun:
    """The run with everything it can include."""
    return await _view(conn, await get_run(conn, factory, uid), EVERYTHING)


async def list_runs(
    conn: AsyncConnection,
    factory: Factory,
    suite_uid: str,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
    include: Collection[RunDetail],
) -> tuple[list[BenchmarkRun], bool]:
    """A page of the suite's runs, newest first, after `after` (created_at, uid); and whether
    more follow."""
    await get_suite(conn, factory, suite_uid)
    query = select(b).where(b.c.suite_uid == suite_uid)
    if after is not None:
        moment, uid = after
        query = query.where(
            or_(b.c.created_at < moment, and_(b.c.created_at == moment, b.c.uid < uid))
        )
    query = query.order_by(b.c.created_at.desc(), b.c.uid.desc()).limit(limit + 1)
    found = [StoredRun.from_row(row) for row in await conn.execute(query)]
    page = found[:limit]
    by_run = await trials(conn, [run.uid for run in page])
    views = [await view(conn, run, by_run[run.uid], include) for run in page]
    return views, len(found) > limit


async def cancel(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str
) -> BenchmarkRun:
    """The run cancelled with its unfinished trials, with its aggregate results."""
    require_manage_access(principal, factory)
    run = await get_run(conn, factory, uid)
    its_trials = await run_trials(conn, run)
    if status_of(run, its_trials) != "running":
        raise RunNotInFlight(f"benchmark_run_uid: {uid} is {status_of(run, its_trials)}")
    for trial in its_trials:
        if not trial.finished and trial.state != "PENDING":
            row = await load_run(conn, trial.agent_run_id)
            # cancel locks the run and checks again: one that ended meanwhile stays as it is
            with contextlib.suppress(RunTerminal, RunPending):
                await cancellation.cancel(conn, row)
    await conn.execute(update(b).where(b.c.uid == uid).values(cancelled_at=utcnow()))
    return await _view(conn, await get_run(conn, factory, uid), ["aggregate_results"])


async def _view(
    conn: AsyncConnection, run: StoredRun, include: Collection[RunDetail]
) -> BenchmarkRun:
    return await view(conn, run, await run_trials(conn, run), include)


async def view(
    conn: AsyncConnection,
    run: StoredRun,
    its_trials: list[StoredTrial],
    include: Collection[RunDetail],
) -> BenchmarkRun:
    """A benchmark run as the API shows it, with what `include` names."""
    found = BenchmarkRun(
        uid=run.uid,
        suite_uid=run.suite_uid,
        factory_uid=run.factory_uid,
        status=status_of(run, its_trials),
        trials=len(its_trials),
        created_at=run.created_at,
        cancelled_at=run.cancelled_at,
    )
    if "launch_settings" in include:
        found.launch_settings = run.configurations
    if "aggregate_results" in include:
        found.aggregate_results = outcome_counts([trial.state for trial in its_trials])
    if "creator_name" in include:
        found.creator_name = await _creator_name(conn, run.created_by_uid)
    return found


def outcome_counts(states: list[str]) -> Aggregate:
    """Trials by their agent run's state: succeeded, failed (or errored), cancelled, running."""
    return Aggregate(
        trials=len(states),
        succeeded=states.count("SUCCEEDED"),
        failed=sum(s in ("FAILED", "ERROR") for s in states),
        cancelled=states.count("CANCELLED"),
        running=sum(s not in TERMINAL for s in states),
    )


async def _creator_name(conn: AsyncConnection, uid: str | None) -> str | None:
    """The launching user's display name, or agent's name."""
    if uid is None:
        return None
    for query in (
        select(t.users.c.display_name).where(t.users.c.uid == uid),
        select(t.agents.c.name).where(t.agents.c.uid == uid),
    ):
        name = (await conn.execute(query)).scalar()
        if name is not None:
            return str(name)
    return None
