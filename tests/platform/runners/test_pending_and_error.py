"""PENDING and ERROR reached through the API (SQLite and PostgreSQL): a runner that accepted a
run but has not started it reports PENDING; a platform failure ends a run ERROR."""

from __future__ import annotations

from tests.platform.runners.test_runner_api import Runner, get_run, new_run, states
from tests.support import World


def test_a_run_its_runner_accepted_but_did_not_start_is_pending(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    assert (
        runner.on(run_id, "progress", state="PENDING", status_message="waiting for a sandbox")[
            "state"
        ]
        == "PENDING"
    )
    run = get_run(world, run_id)
    assert run["state"] == "PENDING" and "started_at" not in run
    listed = world.api("GET", "/agent/runs", params={"state": "PENDING"}).json()["runs"]
    assert [r["run_id"] for r in listed] == [run_id]

    cancel = world.api("POST", f"/agent/runs/{run_id}/cancel")
    assert cancel.status_code == 409 and cancel.json()["code"] == "run_pending"
    followup = world.api("POST", f"/agent/runs/{run_id}/followups", json={"message": "hi"})
    assert followup.json() == {"run_id": run_id, "state": "PENDING", "routing": "queued"}
    assert runner.on(run_id, "heartbeat")["state"] == "PENDING"

    runner.on(run_id, "progress", state="INPROGRESS")
    assert "started_at" in get_run(world, run_id)
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "PENDING", "INPROGRESS"]
    runner.on(run_id, "progress", 400, state="PENDING")  # only a claimed run can wait so


def test_a_pending_run_given_back_is_queued_again(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "progress", state="PENDING")
    assert runner.on(run_id, "release", reason="no sandbox came")["state"] == "QUEUED"
    assert states(world, run_id)[-2:] == ["PENDING", "QUEUED"]


def test_a_platform_failure_ends_the_run_error(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "progress", state="PENDING")
    ended = runner.on(
        run_id,
        "finish",
        outcome="ERROR",
        status_message="sandbox host lost",
        error_code="host_lost",
    )
    assert ended["state"] == "ERROR"
    run = get_run(world, run_id)
    assert run["status_message"] == {
        "message": "sandbox host lost",
        "error_code": "host_lost",
        "retryable": True,
    }
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "PENDING", "ERROR"]
    listed = world.api("GET", "/agent/runs", params={"state": "ERROR"}).json()["runs"]
    assert [r["run_id"] for r in listed] == [run_id]
    cancel = world.api("POST", f"/agent/runs/{run_id}/cancel")
    assert cancel.status_code == 400 and cancel.json()["code"] == "run_terminal"
    resumed = world.api("POST", f"/agent/runs/{run_id}/followups", json={"message": "retry"})
    assert resumed.json()["routing"] == "resumed" and resumed.json()["state"] == "QUEUED"


def test_error_without_a_message_says_the_platform_failed_it(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    many = world.api(
        "POST",
        "/runner/finish",
        headers=world.agent,
        json={"runner_uid": runner.uid, "runs": [{"run_id": run_id, "outcome": "ERROR"}]},
    )
    assert many.json()["finished"][0]["state"] == "ERROR"
    status = get_run(world, run_id)["status_message"]
    assert status["error_code"] == "platform_error" and status["retryable"] is True
