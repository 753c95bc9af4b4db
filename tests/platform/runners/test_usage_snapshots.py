"""Usage a run's harness reports (SQLite and PostgreSQL): each report is the latest cumulative
snapshot of one execution's usage of one model, and a figure never reported reads as
unavailable (null), not 0; factory costs follow the snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from tests.platform.runners.test_runner_api import Runner, new_run
from tests.support import World, eventually


def _usage(world: World, run_id: str) -> dict[str, Any]:
    answer = world.api("GET", f"/agent/runs/{run_id}/usage")
    assert answer.status_code == 200, answer.text
    usage: dict[str, Any] = answer.json()
    return usage


def _held(world: World) -> tuple[Runner, str]:
    run_id = new_run(world)
    runner = Runner(world)
    assert [run["run_id"] for run in runner.claim()] == [run_id]
    return runner, run_id


def test_the_latest_snapshot_of_each_model_stands(world: World) -> None:
    runner, run_id = _held(world)
    runner.on(run_id, "usage", model_id="a", input_tokens=100, output_tokens=10,
              cost_usd={"llm": 0.5})  # fmt: skip
    runner.on(run_id, "usage", model_id="a", input_tokens=150, output_tokens=30,
              cost_usd={"llm": 0.75})  # fmt: skip
    runner.on(run_id, "usage", model_id="b", input_tokens=7, output_tokens=3,
              cost_usd={"llm": 0.1, "compute": 0.02})  # fmt: skip
    usage = _usage(world, run_id)
    assert (usage["input_tokens"], usage["output_tokens"]) == (157, 33)
    assert usage["cost_usd"] == pytest.approx(0.87)
    lines = {(line["model_id"], line["component"]): line for line in usage["components"]}
    assert set(lines) == {("a", "llm"), ("b", "compute"), ("b", "llm")}
    assert lines[("a", "llm")]["cost_usd"] == pytest.approx(0.75)
    assert lines[("a", "llm")]["input_tokens"] == 150


def test_a_metric_never_reported_is_unavailable_not_zero(world: World) -> None:
    runner, run_id = _held(world)
    assert _usage(world, run_id) == {
        "run_id": run_id,
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
        "components": [],
    }
    runner.on(run_id, "usage", model_id="m", cost_usd={"llm": 0.2})
    usage = _usage(world, run_id)
    assert usage["input_tokens"] is None and usage["output_tokens"] is None
    assert usage["cost_usd"] == pytest.approx(0.2)
    assert usage["components"][0]["input_tokens"] is None
    # tokens only: the costs of the earlier snapshot of the model are no longer reported
    runner.on(run_id, "usage", model_id="m", input_tokens=40)
    usage = _usage(world, run_id)
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (40, None, None)
    assert [line["cost_usd"] for line in usage["components"]] == [None]


def test_a_new_execution_adds_its_own_snapshots(world: World) -> None:
    runner, run_id = _held(world)
    runner.on(run_id, "usage", model_id="m", input_tokens=10, cost_usd={"llm": 1.0})
    runner.on(run_id, "release", reason="restarting")
    assert [run["run_id"] for run in runner.claim()] == [run_id]  # attempt 2
    runner.on(run_id, "usage", model_id="m", input_tokens=3, cost_usd={"llm": 0.25})
    runner.on(run_id, "usage", model_id="m", input_tokens=4, cost_usd={"llm": 0.5})
    usage = _usage(world, run_id)
    assert usage["input_tokens"] == 14 and usage["cost_usd"] == pytest.approx(1.5)


def test_factory_costs_follow_the_snapshots(world: World) -> None:
    dispatched = world.api("POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p"})
    run_id = dispatched.json()["run_id"]
    runner = Runner(world)
    # a dispatched run's task is bound in the background, under a row lock the claim skips
    claimed = eventually(runner.claim)
    assert [run["run_id"] for run in claimed] == [run_id]
    for dollars in (0.5, 1.25, 2.0):
        runner.on(run_id, "usage", model_id="gpt-5", input_tokens=1, cost_usd={"llm": dollars})
    spent = world.api(
        "GET", f"/factory/{world.factory_uid}/costs/breakdown", params={"group_by": "model"}
    ).json()
    assert spent["total_cost_usd"] == pytest.approx(2.0)
