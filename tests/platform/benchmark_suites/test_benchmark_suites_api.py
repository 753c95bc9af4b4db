"""Benchmark suites, tasks, runs and trials through the API (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from tests.platform.runners.test_runner_api import Runner, new_run
from tests.support import World

TASK = {"title": "Fix the flaky test", "prompt": "Make CI green.", "success_criteria": "CI passes"}


class Bench:
    def __init__(self, world: World) -> None:
        self.world = world
        self.base = f"/factory/{world.factory_uid}/benchmark-suites"

    def suite(self, **body: Any) -> dict[str, Any]:
        made = self.world.api(
            "POST",
            self.base,
            json={"name": "Nightly", "configurations": [{"name": "default", "attempts": 2}]} | body,
        )
        assert made.status_code == 201, made.text
        created: dict[str, Any] = made.json()
        return created

    def task(self, suite: str, status: int = 201, **body: Any) -> dict[str, Any]:
        made = self.world.api("POST", f"{self.base}/{suite}/tasks", json=TASK | body)
        assert made.status_code == status, made.text
        task: dict[str, Any] = made.json()
        return task


def test_suites_crud_and_soft_delete(world: World) -> None:
    bench = Bench(world)
    suite = bench.suite(description="every night")
    assert suite["configurations"] == [{"name": "default", "model_id": None, "attempts": 2}]
    assert suite["tasks"] == []
    listed = world.api("GET", bench.base, headers=world.agent).json()["suites"]
    assert [s["uid"] for s in listed] == [suite["uid"]]
    at = f"{bench.base}/{suite['uid']}"
    edited = world.api("PATCH", at, json={"name": "Weekly"}).json()
    assert edited["name"] == "Weekly" and edited["description"] == "every night"
    for body, field in (
        ({}, "body"),
        ({"configurations": []}, "configurations"),
        ({"configurations": [{"name": "a"}, {"name": "a"}]}, "configurations[1].name"),
        ({"configurations": [{"name": "a", "model_id": "no-such-model"}]}, "configurations[0]"),
        ({"name": " "}, "name"),
    ):
        refused = world.api("PATCH", at, json=body)
        assert refused.status_code == 400 and refused.json()["detail"].startswith(field), body
    assert world.api("PATCH", at, json={"name": "x"}, headers=world.agent).status_code == 403
    assert world.api("GET", at, headers=world.stranger).status_code == 403
    assert world.api("DELETE", at).status_code == 204
    assert world.api("GET", at).status_code == 404
    assert world.api("GET", bench.base).json()["suites"] == []
    assert world.api("POST", f"{at}/runs").status_code == 404


def test_tasks_identical_conflicting_and_edits(world: World) -> None:
    bench = Bench(world)
    suite = bench.suite()["uid"]
    source = new_run(world, "where it came from")
    first = bench.task(suite, source_run_id=source, tags=["ci"], starting_repo_refs=["main"])
    again = bench.task(suite, 200, source_run_id=source, tags=["ci"], starting_repo_refs=["main"])
    assert again["uid"] == first["uid"]  # identical: the existing one
    conflict = world.api(
        "POST", f"{bench.base}/{suite}/tasks", json=TASK | {"prompt": "Something else."}
    )
    assert conflict.status_code == 409 and conflict.json()["code"] == "task_title_taken"
    hidden = new_run(world, "not yours")
    stranger_run = world.api("POST", "/agent/runs", json={"prompt": "x"}, headers=world.stranger)
    refused = world.api(
        "POST",
        f"{bench.base}/{suite}/tasks",
        json=TASK | {"title": "Other", "source_run_id": stranger_run.json()["run_id"]},
    )
    assert refused.status_code == 400 and refused.json()["detail"].startswith("source_run_id")
    assert hidden

    at = f"{bench.base}/{suite}/tasks/{first['uid']}"
    kept = world.api("PATCH", at, json={"prompt": "Make CI green, twice."}).json()
    assert kept["title"] == TASK["title"] and kept["tags"] == ["ci"]
    cleared = world.api(
        "PATCH", at, json={"source_run_id": None, "tags": [], "starting_repo_refs": []}
    ).json()
    assert (cleared["source_run_id"], cleared["tags"], cleared["starting_repo_refs"]) == (
        None,
        [],
        [],
    )
    for body in ({"title": None}, {"prompt": " "}, {"success_criteria": None}, {}):
        assert world.api("PATCH", at, json=body).status_code == 400, body
    second = bench.task(suite, title="Second")
    taken = world.api("PATCH", at, json={"title": "Second"})
    assert taken.status_code == 409
    got = world.api("GET", f"{bench.base}/{suite}").json()
    assert [t["uid"] for t in got["tasks"]] == [first["uid"], second["uid"]]
    assert world.api("DELETE", at).status_code == 204
    assert world.api("GET", at).status_code == 404


def test_launch_trials_results_and_cancel(world: World) -> None:
    bench = Bench(world)
    suite = bench.suite(
        configurations=[{"name": "fast", "attempts": 1}, {"name": "careful", "attempts": 2}]
    )["uid"]
    launch = f"{bench.base}/{suite}/runs"
    assert world.api("POST", launch).status_code == 400  # no task yet
    bench.task(suite)
    bench.task(suite, title="Second task")
    first = world.api("POST", launch)
    assert first.status_code == 201, first.text
    run = first.json()
    assert (run["status"], run["trials"]) == ("running", 6)
    second = world.api("POST", launch).json()
    assert second["uid"] != run["uid"]  # not idempotent

    at = f"/factory/{world.factory_uid}/benchmark-runs/{run['uid']}"
    trials = world.api("GET", f"{at}/trials", params={"limit": 4}).json()
    assert len(trials["data"]) == 4 and trials["page_info"]["has_next_page"]
    rest = world.api("GET", f"{at}/trials", params={"cursor": trials["page_info"]["next_cursor"]})
    assert len(rest.json()["data"]) == 2
    everything = trials["data"] + rest.json()["data"]
    assert sorted((t["configuration"], t["attempt_number"]) for t in everything) == sorted(
        [("fast", 1), ("careful", 1), ("careful", 2)] * 2
    )

    # a runner executes this run's trials: one succeeds, one fails
    runner = Runner(world)
    mine = {t["agent_run_id"] for t in everything}
    claimed = [c for c in runner.claim(max_runs=50) if c["run_id"] in mine]
    assert claimed and all(c["source"] == "BENCHMARK" for c in claimed)
    done, broken = claimed[0]["run_id"], claimed[1]["run_id"]
    runner.on(done, "finish", outcome="SUCCEEDED")
    runner.on(broken, "finish", outcome="FAILED", status_message="no")

    found = world.api("GET", f"{at}/trials", params={"agent_run_id": done}).json()
    assert [t["agent_run_id"] for t in found["data"]] == [done]
    assert found["matched_attempt_number"] == found["data"][0]["attempt_number"]
    none = world.api("GET", f"{at}/trials", params={"agent_run_id": "nope"}).json()
    assert none == {"data": [], "matched_attempt_number": None}
    for extra in ({"limit": 2}, {"configuration": "fast"}, {"cursor": "x"}):
        refused = world.api("GET", f"{at}/trials", params={"agent_run_id": done} | extra)
        assert refused.status_code == 400, extra

    results = world.api("GET", f"{at}/results", params={"include": "metrics"}).json()
    totals = {c["configuration"]: c for c in results["configurations"]}
    assert sum(c["succeeded"] for c in totals.values()) == 1
    assert sum(c["failed"] for c in totals.values()) == 1
    assert all(len(c["outcomes"]) == c["trials"] for c in totals.values())
    plain = world.api("GET", f"{at}/results").json()["configurations"][0]
    assert "outcomes" not in plain

    trial_uid = found["data"][0]["uid"]
    one = world.api("GET", f"{at}/trials/{trial_uid}", params={"include": ["results", "details"]})
    assert one.json()["results"]["outcome"] == "SUCCEEDED"
    assert one.json()["details"]["run_id"] == done

    listed = world.api(
        "GET", launch, params={"include": ["aggregate_results", "creator_name", "launch_settings"]}
    ).json()
    assert [r["uid"] for r in listed["data"]] == [second["uid"], run["uid"]]
    older = listed["data"][1]
    assert older["aggregate_results"]["succeeded"] == 1 and older["creator_name"]
    assert older["launch_settings"][1]["name"] == "careful"

    cancelled = world.api("POST", f"{at}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    states = [
        world.api("GET", f"/agent/runs/{t['agent_run_id']}").json()["state"] for t in everything
    ]
    assert states.count("SUCCEEDED") == 1 and states.count("FAILED") == 1
    assert states.count("CANCELLED") == 4
    again = world.api("POST", f"{at}/cancel")
    assert again.status_code == 409 and again.json()["code"] == "benchmark_run_not_in_flight"
    assert world.api("POST", f"{at}/cancel", headers=world.agent).status_code == 403
