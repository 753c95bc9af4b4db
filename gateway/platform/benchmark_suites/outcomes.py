"""How a benchmark run went: its results per configuration, and its trials (spec 4.9;
docs/api.md, "Benchmark suites")."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.accounts.factories import Factory
from gateway.kernel.errors import NotFound
from gateway.platform.benchmark_suites.models import (
    ConfigurationResult,
    Results,
    Trial,
    TrialDetail,
    TrialPage,
    TrialResults,
)
from gateway.platform.benchmark_suites.records import (
    StoredTrial,
    costs,
    get_run,
    run_trials,
    status_of,
)
from gateway.platform.benchmark_suites.runs import outcome_counts
from gateway.platform.runs.record.items import run_item
from gateway.platform.runs.record.store import load_run


async def run_results(
    conn: AsyncConnection, factory: Factory, uid: str, *, metrics: bool
) -> Results:
    """Per configuration: trials by outcome, pass rate over finished ones, mean duration and
    cost; with `metrics`, per trial in order: outcome, duration, cost."""
    run = await get_run(conn, factory, uid)
    its_trials = await run_trials(conn, run)
    spent = await costs(conn, [trial.agent_run_id for trial in its_trials])
    by_configuration: dict[str, list[StoredTrial]] = defaultdict(list)
    for trial in its_trials:
        by_configuration[trial.configuration].append(trial)
    found = [
        _configuration_result(name, group, spent, metrics=metrics)
        for name, group in by_configuration.items()
    ]
    return Results(run.uid, status_of(run, its_trials), found)


def _configuration_result(
    name: str, group: list[StoredTrial], spent: dict[str, float], *, metrics: bool
) -> ConfigurationResult:
    states = [trial.state for trial in group]
    finished = [trial.state for trial in group if trial.finished and trial.state != "CANCELLED"]
    durations = [duration_s(trial) for trial in group]
    ended = [d for d in durations if d is not None]
    trial_costs = [spent.get(trial.agent_run_id, 0.0) for trial in group]
    counts = outcome_counts(states)
    item = ConfigurationResult(
        configuration=name,
        trials=counts.trials,
        succeeded=counts.succeeded,
        failed=counts.failed,
        cancelled=counts.cancelled,
        running=counts.running,
        pass_rate=round(states.count("SUCCEEDED") / len(finished), 6) if finished else None,
        mean_duration_s=round(sum(ended) / len(ended), 3) if ended else None,
        cost_usd=round(sum(trial_costs), 6),
    )
    if metrics:
        item.outcomes, item.durations_s, item.costs_usd = states, durations, trial_costs
    return item


def duration_s(trial: StoredTrial) -> float | None:
    if not trial.finished:
        return None
    elapsed: float = (trial.run_updated_at - trial.run_created_at).total_seconds()
    return round(elapsed, 3)


async def trial_page(
    conn: AsyncConnection,
    factory: Factory,
    run_uid: str,
    *,
    configuration: str | None,
    task_uid: str | None,
    start: int,
    limit: int,
) -> tuple[list[Trial], bool]:
    """The run's trials from position `start` (of those of `configuration` and `task_uid`,
    when given), and whether more follow."""
    its_trials = await run_trials(conn, await get_run(conn, factory, run_uid))
    chosen = [
        trial
        for trial in its_trials
        if (configuration is None or trial.configuration == configuration)
        and (task_uid is None or trial.task_uid == task_uid)
    ]
    page = chosen[start : start + limit]
    return [trial.view() for trial in page], start + limit < len(chosen)


async def agent_run_trial(
    conn: AsyncConnection, factory: Factory, run_uid: str, agent_run_id: str
) -> TrialPage:
    """The trial (zero or one) that `agent_run_id` executed, and its attempt number."""
    its_trials = await run_trials(conn, await get_run(conn, factory, run_uid))
    matched = [trial for trial in its_trials if trial.agent_run_id == agent_run_id]
    return TrialPage(
        data=[trial.view() for trial in matched],
        matched_attempt_number=matched[0].attempt_number if matched else None,
    )


async def one_trial(
    conn: AsyncConnection,
    factory: Factory,
    run_uid: str,
    trial_uid: str,
    include: Collection[TrialDetail],
) -> Trial:
    """One trial of the run, with its results and its agent run's details when asked."""
    its_trials = await run_trials(conn, await get_run(conn, factory, run_uid))
    found = [trial for trial in its_trials if trial.uid == trial_uid]
    if not found:
        raise NotFound(f"trial_uid: no trial {trial_uid} in this run")
    trial = found[0]
    shown = trial.view()
    if not include:
        return shown
    agent_run = await load_run(conn, trial.agent_run_id)
    if "results" in include:
        spent = await costs(conn, [trial.agent_run_id])
        shown.results = TrialResults(
            outcome=trial.state,
            duration_s=duration_s(trial),
            cost_usd=spent.get(trial.agent_run_id, 0.0),
            status_message=agent_run.status_message,
        )
    if "details" in include:
        shown.details = await run_item(conn, agent_run)
    return shown
