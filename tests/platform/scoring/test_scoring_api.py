"""Scoring jobs executed by a runner, and what they found: a scorer's results (keyset pages,
by run, with reasons), its metrics, a run's current scores. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from tests.platform.runners.test_runner_api import Runner
from tests.platform.scoring.test_scorers_api import NIL, Setup, _scorer_of, _second_factory
from tests.support import World

JOBS = "/runner/scoring-jobs"


def _claim(runner: Runner, max_jobs: int = 50) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = runner.call(f"{JOBS}/claim", max_jobs=max_jobs)["jobs"]
    return jobs


def _report(runner: Runner, job_id: str, status: int = 201, **outcome: Any) -> Any:
    return runner.call(f"{JOBS}/{job_id}/outcome", status, **outcome)


def test_a_runner_scores_dispatched_runs_and_the_results_read_back(world: World) -> None:
    setup = Setup(world)
    runs = [setup.run, setup.factory_run(), setup.factory_run()]
    assert setup.dispatch(runs).status_code == 200
    runner = Runner(world)
    jobs = _claim(runner)
    assert [job["run"]["run_id"] for job in jobs] == runs
    assert jobs[0]["prompt"] == "Judge" and jobs[0]["scorer_uid"] == setup.scorer
    assert jobs[0]["run"]["prompt"].startswith("Build it")
    assert _claim(runner) == []  # claimed: nobody else gets them within the lease

    first = _report(runner, jobs[0]["job_id"], score=0.9, reasoning="clean")
    assert (first["status"], first["score"], first["reasoning"]) == ("scored", 0.9, "clean")
    _report(runner, jobs[1]["job_id"], score=0.4, reasoning="sloppy")
    failed = _report(runner, jobs[2]["job_id"], error="the transcript was unreadable")
    assert (failed["status"], failed["score"]) == ("failed", None)
    # once only; and a score or an error, never both or neither
    _report(runner, jobs[0]["job_id"], 409, score=0.1)
    for outcome in ({}, {"score": 0.5, "error": "x"}, {"score": 1.5}):
        assert "score" in _report(runner, jobs[1]["job_id"], 400, **outcome)["detail"]

    at = f"{setup.base}/scorers/{setup.scorer}/results"
    page = world.api("GET", at, params={"limit": 2}).json()
    assert [r["run_id"] for r in page["results"]] == [runs[2], runs[1]]  # newest first
    assert "reasoning" not in page["results"][0]
    rest = world.api("GET", at, params={"limit": 2, "cursor": page["page_info"]["next_cursor"]})
    assert [r["run_id"] for r in rest.json()["results"]] == [runs[0]]
    assert rest.json()["page_info"] == {"has_next_page": False, "next_cursor": None}
    tampered = page["page_info"]["next_cursor"][:-2] + "xx"
    assert world.api("GET", at, params={"cursor": tampered}).status_code == 400

    by_run = world.api(
        "GET", at, params={"run_id": [runs[0], runs[1]], "include_reasons": "true"}
    ).json()
    assert [(r["run_id"], r["reasoning"]) for r in by_run["results"]] == [
        (runs[1], "sloppy"),
        (runs[0], "clean"),
    ]
    mixed = world.api(
        "GET", at, params={"run_id": runs[0], "cursor": page["page_info"]["next_cursor"]}
    )
    assert mixed.status_code == 400 and mixed.json()["detail"].startswith("cursor")

    scores = world.api("GET", f"/agent/runs/{runs[0]}/scores", headers=world.agent).json()
    assert [(s["scorer_uid"], s["score"], s["reasoning"]) for s in scores["scores"]] == [
        (setup.scorer, 0.9, "clean")
    ]
    assert world.api("GET", f"/agent/runs/{runs[2]}/scores").json()["scores"] == []
    assert (
        world.api("GET", f"/agent/runs/{runs[0]}/scores", headers=world.stranger).status_code == 404
    )

    # a second dispatch of the same pair, scored again: the run's current score is the newest
    assert setup.dispatch([runs[0]]).status_code == 200
    (again,) = _claim(runner)
    _report(runner, again["job_id"], score=0.7)
    current = world.api("GET", f"/agent/runs/{runs[0]}/scores").json()["scores"]
    assert [s["score"] for s in current] == [0.7]


def test_metrics_count_attempts_and_average_scores_per_period(world: World) -> None:
    setup = Setup(world)
    runs = [setup.run, setup.factory_run()]
    setup.dispatch(runs)
    runner = Runner(world)
    jobs = _claim(runner)
    _report(runner, jobs[0]["job_id"], score=1.0)
    _report(runner, jobs[1]["job_id"], score=0.5)
    setup.dispatch([runs[0]])
    (third,) = _claim(runner)
    _report(runner, third["job_id"], error="timed out")

    at = f"{setup.base}/scorers/{setup.scorer}/metrics"
    totals = world.api("GET", at).json()
    assert (totals["attempts"], totals["scored"], totals["failed"]) == (3, 2, 1)
    assert totals["mean_score"] == 0.75 and totals["group_by_period"] is None
    today = datetime.now(UTC).date()
    start = (today - timedelta(days=2)).isoformat() + "T00:00:00Z"
    end = (today + timedelta(days=1)).isoformat() + "T00:00:00Z"
    daily = world.api(
        "GET", at, params={"start_date": start, "end_date": end, "group_by_period": "day"}
    ).json()
    assert daily["period_list"][-1] == today.isoformat() and len(daily["period_list"]) == 3
    assert daily["attempts_series"] == [0, 0, 3]
    assert daily["mean_score_series"] == [None, None, 0.75]
    too_long = {"start_date": "2020-01-01T00:00:00Z", "group_by_period": "day"}
    assert world.api("GET", at, params=too_long).status_code == 400
    assert world.api("GET", at, headers=world.stranger).status_code == 403


def test_only_the_holding_runner_of_the_team_reports(world: World) -> None:
    setup = Setup(world)
    setup.dispatch([setup.run])
    mine, other = Runner(world), Runner(world)
    (job,) = _claim(mine)
    _report(other, job["job_id"], 409, score=0.5)
    _report(mine, "no-such-job", 404, score=0.5)
    # a user key runs no runner
    answer = world.api("POST", f"{JOBS}/claim", json={"runner_uid": mine.uid})
    assert answer.status_code in (403, 404)
    _report(mine, job["job_id"], score=0.5)


def test_deleting_the_scorer_deletes_its_results(world: World) -> None:
    setup = Setup(world)
    setup.dispatch([setup.run])
    runner = Runner(world)
    (job,) = _claim(runner)
    _report(runner, job["job_id"], score=0.8)
    assert world.api("DELETE", f"{setup.base}/scorers/{setup.scorer}").status_code == 204
    assert world.api("GET", f"/agent/runs/{setup.run}/scores").json()["scores"] == []
    assert world.api("GET", f"{setup.base}/scorers/{setup.scorer}/results").status_code == 404


def test_reads_refuse_other_factories_strangers_unknown_runs_and_bad_parameters(
    world: World,
) -> None:
    setup = Setup(world)
    elsewhere = _scorer_of(world, _second_factory(world))
    for read in ("results", "metrics"):
        mine = f"{setup.base}/scorers/{setup.scorer}/{read}"
        assert world.api("GET", mine, headers=world.stranger).status_code == 403
        # a scorer of another factory is not found under this factory's path
        assert world.api("GET", f"{setup.base}/scorers/{elsewhere}/{read}").status_code == 404
    at = f"{setup.base}/scorers/{setup.scorer}/results"
    for params, field in (
        ({"limit": 0}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"include_reasons": "perhaps"}, "include_reasons"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ):
        refused = world.api("GET", at, params=params)
        assert refused.status_code == 400, params
        assert field in refused.json()["detail"], (params, refused.json())
    assert world.api("GET", f"/agent/runs/{NIL}/scores").status_code == 404


def test_deleting_the_scorer_leaves_no_attempt_in_the_store(world: World) -> None:
    setup = Setup(world)
    setup.dispatch([setup.run])
    runner = Runner(world)
    (job,) = _claim(runner)
    _report(runner, job["job_id"], score=0.3, reasoning="kept until the scorer goes")

    def attempts() -> int:
        async def go(services: Services) -> int:
            a = t.scoring_attempts
            query = select(func.count()).select_from(a).where(a.c.scorer_uid == setup.scorer)
            async with services.database.read() as conn:
                return int((await conn.execute(query)).scalar_one())

        return world.client.run(go)

    assert attempts() == 1
    assert world.api("DELETE", f"{setup.base}/scorers/{setup.scorer}").status_code == 204
    assert attempts() == 0 and setup.jobs() == []
