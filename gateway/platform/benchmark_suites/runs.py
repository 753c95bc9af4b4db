"""Benchmark runs: a launch of a suite, one trial (an agent run) per task x configuration x
attempt (spec 4.9; docs/api.md, "Benchmark suites").

Launching is not idempotent: each launch makes a new run. Trials are ordinary QUEUED runs of
the factory (source BENCHMARK, executed by its foreman), so any runner of the team executes
them. A run's status follows its trials: running while any is not finished, then completed;
cancelled once cancelled (its unfinished trials are cancelled with it).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Row, and_, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway import ids
from gateway.accounts.factories import Factory, require_manage_access
from gateway.accounts.identities import Principal
from gateway.errors import Conflict, InvalidRequest, NotFound, RunPending, RunTerminal
from gateway.platform.benchmark_suites.suites import get_suite, suite_tasks
from gateway.platform.runs import lifecycle as run_lifecycle
from gateway.platform.runs.models import AgentConfig, RunRecord
from gateway.platform.runs.records import TERMINAL, NewRun, insert_run, load_run
from gateway.store import tables as t
from gateway.store.types import utcnow

MAX_TRIALS = 500  # per launch
SOURCE = "BENCHMARK"
b, tr, r = t.benchmark_runs, t.benchmark_trials, t.runs


class RunNotInFlight(Conflict):
    code, title = "benchmark_run_not_in_flight", "The benchmark run already ended"


async def launch(
    conn: AsyncConnection, principal: Principal, factory: Factory, suite_uid: str
) -> Row[Any]:
    require_manage_access(principal, factory)
    suite = await get_suite(conn, factory, suite_uid)
    tasks = await suite_tasks(conn, suite_uid)
    if not tasks:
        raise InvalidRequest("suite_uid: the suite has no task to run")
    configurations = suite.configurations
    trials = len(tasks) * sum(c["attempts"] for c in configurations)
    if trials > MAX_TRIALS:
        raise InvalidRequest(f"configurations: {trials} trials; at most {MAX_TRIALS} a launch")
    uid, now = ids.new_uuid(), utcnow()
    await conn.execute(
        insert(b).values(
            uid=uid,
            suite_uid=suite_uid,
            factory_uid=factory.uid,
            configurations=configurations,
            created_by_uid=principal.uid,
            created_at=now,
        )
    )
    rows = []
    for task in tasks:
        for configuration in configurations:
            for attempt in range(1, configuration["attempts"] + 1):
                run = await insert_run(
                    conn, _trial_run(factory, principal, suite, task, configuration, uid, attempt)
                )
                rows.append(
                    {
                        "uid": ids.new_uuid(),
                        "benchmark_run_uid": uid,
                        "task_uid": task.uid,
                        "task_title": task.title,
                        "configuration": configuration["name"],
                        "attempt_number": attempt,
                        "agent_run_id": run.run_id,
                        "created_at": now,
                    }
                )
    await conn.execute(insert(tr), rows)
    return await get_run(conn, factory, uid)


def _trial_run(
    factory: Factory,
    principal: Principal,
    suite: Row[Any],
    task: Row[Any],
    configuration: dict[str, Any],
    run_uid: str,
    attempt: int,
) -> NewRun:
    model = configuration.get("model_id")
    return NewRun(
        prompt=f"{task.prompt}\n\nSuccess criteria:\n{task.success_criteria}",
        title=f"{suite.name}: {task.title} [{configuration['name']}] #{attempt}"[:500],
        team_uid=factory.team_uid,
        factory_uid=factory.uid,
        creator=principal,
        source=SOURCE,
        agent_config=AgentConfig(model_id=model) if model else None,
        metadata={
            "benchmark_run_uid": run_uid,
            "benchmark_task_uid": task.uid,
            "configuration": configuration["name"],
            "attempt": str(attempt),
        },
        agent_uid=factory.foreman_agent_uid,
    )


async def get_run(conn: AsyncConnection, factory: Factory, uid: str) -> Row[Any]:
    row = (await conn.execute(select(b).where(b.c.uid == uid))).first()
    if row is None or row.factory_uid != factory.uid:
        raise NotFound(f"benchmark_run_uid: no benchmark run {uid} in this factory")
    return row


async def list_runs(
    conn: AsyncConnection,
    factory: Factory,
    suite_uid: str,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
) -> tuple[list[Row[Any]], bool]:
    await get_suite(conn, factory, suite_uid)
    query = select(b).where(b.c.suite_uid == suite_uid)
    if after is not None:
        moment, uid = after
        query = query.where(
            or_(b.c.created_at < moment, and_(b.c.created_at == moment, b.c.uid < uid))
        )
    query = query.order_by(b.c.created_at.desc(), b.c.uid.desc()).limit(limit + 1)
    rows = list(await conn.execute(query))
    return rows[:limit], len(rows) > limit


async def trials(conn: AsyncConnection, run_uids: list[str]) -> dict[str, list[Row[Any]]]:
    """Per benchmark run, its trials with their agent run's state and times."""
    query = (
        select(
            tr,
            r.c.state,
            r.c.created_at.label("run_created_at"),
            r.c.updated_at.label("run_updated_at"),
        )
        .join(r, r.c.run_id == tr.c.agent_run_id)
        .where(tr.c.benchmark_run_uid.in_(run_uids))
        .order_by(tr.c.created_at, tr.c.task_title, tr.c.configuration, tr.c.attempt_number)
    )
    found: dict[str, list[Row[Any]]] = defaultdict(list)
    for row in await conn.execute(query):
        found[row.benchmark_run_uid].append(row)
    return found


def status_of(run: Row[Any], its_trials: list[Row[Any]]) -> str:
    if run.cancelled_at is not None:
        return "cancelled"
    return "running" if any(t.state not in TERMINAL for t in its_trials) else "completed"


async def cancel(
    conn: AsyncConnection, principal: Principal, factory: Factory, uid: str
) -> Row[Any]:
    require_manage_access(principal, factory)
    run = await get_run(conn, factory, uid)
    its_trials = (await trials(conn, [uid]))[uid]
    if status_of(run, its_trials) != "running":
        raise RunNotInFlight(f"benchmark_run_uid: {uid} is {status_of(run, its_trials)}")
    for trial in its_trials:
        if trial.state not in TERMINAL and trial.state != "PENDING":
            row = await load_run(conn, trial.agent_run_id)
            # cancel locks the run and checks again: one that ended meanwhile stays as it is
            with contextlib.suppress(RunTerminal, RunPending):
                await run_lifecycle.cancel(conn, row)
    await conn.execute(update(b).where(b.c.uid == uid).values(cancelled_at=utcnow()))
    return await get_run(conn, factory, uid)


async def costs(conn: AsyncConnection, run_ids: list[str]) -> dict[str, float]:
    u = t.run_usage
    query = (
        select(u.c.run_id, func.sum(u.c.cost_usd))
        .where(u.c.run_id.in_(run_ids))
        .group_by(u.c.run_id)
    )
    return {run_id: float(total or 0) for run_id, total in await conn.execute(query)}


async def run_json(
    conn: AsyncConnection, row: Row[Any], its_trials: list[Row[Any]], include: list[str]
) -> dict[str, Any]:
    """A benchmark run as the API shows it; `include`: launch_settings, aggregate_results,
    creator_name."""
    found: dict[str, Any] = {
        "uid": row.uid,
        "suite_uid": row.suite_uid,
        "factory_uid": row.factory_uid,
        "status": status_of(row, its_trials),
        "trials": len(its_trials),
        "created_at": row.created_at,
        "cancelled_at": row.cancelled_at,
    }
    if "launch_settings" in include:
        found["launch_settings"] = row.configurations
    if "aggregate_results" in include:
        found["aggregate_results"] = _outcome_counts([trial.state for trial in its_trials])
    if "creator_name" in include:
        found["creator_name"] = await _creator_name(conn, row.created_by_uid)
    return found


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


def trial_json(row: Row[Any]) -> dict[str, Any]:
    return {
        "uid": row.uid,
        "benchmark_run_uid": row.benchmark_run_uid,
        "task_uid": row.task_uid,
        "task_title": row.task_title,
        "configuration": row.configuration,
        "attempt_number": row.attempt_number,
        "agent_run_id": row.agent_run_id,
        "state": row.state,
        "created_at": row.created_at,
    }


def duration_s(row: Row[Any]) -> float | None:
    if row.state not in TERMINAL:
        return None
    elapsed: float = (row.run_updated_at - row.run_created_at).total_seconds()
    return round(elapsed, 3)


def results(
    its_trials: list[Row[Any]], spent: dict[str, float], *, metrics: bool
) -> list[dict[str, Any]]:
    """Per configuration: trials by outcome, pass rate over finished ones, mean duration and
    cost; with `metrics`, per trial in order: outcome, duration, cost."""
    by_configuration: dict[str, list[Row[Any]]] = defaultdict(list)
    for trial in its_trials:
        by_configuration[trial.configuration].append(trial)
    found = []
    for name, group in by_configuration.items():
        states = [trial.state for trial in group]
        finished = [s for s in states if s in TERMINAL and s != "CANCELLED"]
        durations = [duration_s(trial) for trial in group]
        ended = [d for d in durations if d is not None]
        costs = [spent.get(trial.agent_run_id, 0.0) for trial in group]
        item: dict[str, Any] = {
            "configuration": name,
            **_outcome_counts(states),
            "pass_rate": round(states.count("SUCCEEDED") / len(finished), 6) if finished else None,
            "mean_duration_s": round(sum(ended) / len(ended), 3) if ended else None,
            "cost_usd": round(sum(costs), 6),
        }
        if metrics:
            item |= {"outcomes": states, "durations_s": durations, "costs_usd": costs}
        found.append(item)
    return found


def trial_results(trial: Row[Any], agent_run: RunRecord, spent: dict[str, float]) -> dict[str, Any]:
    """How one trial went: its agent run's outcome, duration, cost and status message."""
    return {
        "outcome": trial.state,
        "duration_s": duration_s(trial),
        "cost_usd": spent.get(trial.agent_run_id, 0.0),
        "status_message": agent_run.status_message,
    }


def _outcome_counts(states: list[str]) -> dict[str, int]:
    """Trials by their agent run's state: succeeded, failed (or errored), cancelled, running."""
    return {
        "trials": len(states),
        "succeeded": states.count("SUCCEEDED"),
        "failed": sum(s in ("FAILED", "ERROR") for s in states),
        "cancelled": states.count("CANCELLED"),
        "running": sum(s not in TERMINAL for s in states),
    }
