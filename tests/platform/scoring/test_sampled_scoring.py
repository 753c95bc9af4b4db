"""File scorers score completed runs on their own (docs/factory-files.md#scorers): a run a
runner finishes SUCCEEDED or FAILED gets a scoring job from each enabled scorer of its
factory's files that is configured for its agent and samples it (by the run's id: the same run
always the same way), once; a cancelled run, a disabled scorer and another agent's scorer get
none. The outcome's label and verdict follow the scorer's `labels` and `passingScore`, and the
run's scores show them. SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from gateway.platform.scoring.sampling import bucket, sampled
from tests.platform.factory_files.support import applied
from tests.platform.factory_files.trees import minimal
from tests.platform.runners.test_runner_api import Runner
from tests.support import World

JOBS = "/runner/scoring-jobs"


def _scorer(agents: str, rate: str, *, enabled: str = "true") -> str:
    return (
        f"---\nagents: [{agents}]\nenabled: {enabled}\nlabels:\n"
        "  - value: good\n    score: 1\n  - value: fair\n    score: 0.6\n"
        "  - value: poor\n    score: 0\n"
        f"passingScore: 0.7\nsamplingRate: {rate}\nmodel: auto\n---\nJudge the work.\n"
    )


FILES = {
    "agents/helper/agent.md": "---\nagentType: IMPLEMENT\n---\nHelp.\n",
    "scorers/every/scorer.md": _scorer("boss", "100"),
    "scorers/half/scorer.md": _scorer("boss", "50"),
    "scorers/off/scorer.md": _scorer("boss", "100", enabled="false"),
    "scorers/helpers/scorer.md": _scorer("helper", "100"),
}


def test_the_sampling_rule_is_the_run_ids_hash() -> None:
    # sha256("00000000-0000-0000-0000-000000000001") begins 7ac1b8d7: 2059516119 % 10,000
    assert bucket("00000000-0000-0000-0000-000000000001") == 6119
    ids = [f"run-{i}" for i in range(2000)]
    assert all(sampled(i, 100) for i in ids) and not any(sampled(i, 0) for i in ids)
    share = sum(sampled(i, 25) for i in ids) / len(ids)
    assert 0.2 < share < 0.3
    assert [sampled(i, 25) for i in ids] == [bucket(i) < 2500 for i in ids]


def _runs(world: World, agent_uid: str, count: int) -> list[str]:
    made = []
    for i in range(count):
        answer = world.api(
            "POST", "/agent/runs", json={"prompt": f"Work {i}.", "agent_identity_uid": agent_uid}
        )
        assert answer.status_code in (200, 201), answer.text
        made.append(answer.json()["run_id"])
    return made


def _claim_jobs(runner: Runner) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = runner.call(f"{JOBS}/claim", max_jobs=50)["jobs"]
    return jobs


def test_completed_runs_are_sampled_by_the_enabled_scorers_of_their_agent(world: World) -> None:
    factory_uid = applied(world, minimal("scored", FILES))["factory_uid"]
    listed = world.api("GET", f"/agent/identities?factory_uid={factory_uid}").json()["agents"]
    agents = {agent["name"]: agent["uid"] for agent in listed}
    scorers = world.api("GET", f"/factory/{factory_uid}/scorers").json()["scorers"]
    by_name = {scorer["name"]: scorer for scorer in scorers}
    assert by_name["half"]["sampling_rate"] == 50 and by_name["half"]["passing_score"] == 0.7

    boss_runs = _runs(world, agents["boss"], 12)
    cancelled = _runs(world, agents["boss"], 1)[0]
    assert world.api("POST", f"/agent/runs/{cancelled}/cancel").status_code in (200, 202)
    runner = Runner(world)
    claimed = {run["run_id"] for run in runner.claim(20)}
    assert claimed == set(boss_runs)
    assert _claim_jobs(runner) == []  # nothing is scored before it completes
    failed = boss_runs[0]
    runner.on(failed, "finish", outcome="FAILED")
    for run_id in boss_runs[1:4]:
        runner.on(run_id, "finish", outcome="SUCCEEDED")
    batch = [{"run_id": run_id, "outcome": "SUCCEEDED"} for run_id in boss_runs[4:]]
    finished = runner.call("/runner/finish", runs=batch, claim=0)["finished"]
    assert len(finished) == len(batch)

    jobs = _claim_jobs(runner)
    pairs = {(job["scorer_name"], job["run"]["run_id"]) for job in jobs}
    expected = {("every", run_id) for run_id in boss_runs}
    expected |= {("half", run_id) for run_id in boss_runs if sampled(run_id, 50)}
    assert pairs == expected
    assert 0 < len(expected) - len(boss_runs) < len(boss_runs)  # half sampled some, not all
    job = next(job for job in jobs if job["scorer_name"] == "every")
    assert job["trigger"] == "sampled" and job["model_id"] == "auto"
    assert job["passing_score"] == 0.7 and [x["value"] for x in job["labels"]] == [
        "good",
        "fair",
        "poor",
    ]

    # the outcome's label and verdict, from the scorer's labels and passing score
    every = {job["run"]["run_id"]: job["job_id"] for job in jobs if job["scorer_name"] == "every"}
    fair = runner.call(f"{JOBS}/{every[boss_runs[1]]}/outcome", 201, label="fair")
    assert (fair["score"], fair["label"], fair["passed"]) == (0.6, "fair", False)
    good = runner.call(f"{JOBS}/{every[boss_runs[2]]}/outcome", 201, score=0.9, reasoning="t")
    assert (good["label"], good["passed"]) == ("good", True)
    unknown = runner.call(f"{JOBS}/{every[boss_runs[3]]}/outcome", 400, label="great")
    assert unknown["detail"].startswith("label:")
    scores = world.api("GET", f"/agent/runs/{boss_runs[2]}/scores").json()["scores"]
    assert [(s["scorer_name"], s["score"], s["label"], s["passed"]) for s in scores] == [
        ("every", 0.9, "good", True)
    ]

    # a follow-up completes the run again: it was sampled once, it is not again
    followup = world.api("POST", f"/agent/runs/{boss_runs[1]}/followups", json={"message": "more"})
    assert followup.status_code == 200, followup.text
    assert [run["run_id"] for run in runner.claim(5)] == [boss_runs[1]]
    runner.on(boss_runs[1], "finish", outcome="SUCCEEDED")
    assert _claim_jobs(runner) == []

    # the helper's scorer scores the helper's runs, and only those
    (helper_run,) = _runs(world, agents["helper"], 1)
    assert [run["run_id"] for run in runner.claim(5)] == [helper_run]
    runner.on(helper_run, "finish", outcome="SUCCEEDED")
    assert {(job["scorer_name"], job["run"]["run_id"]) for job in _claim_jobs(runner)} == {
        ("helpers", helper_run)
    }
