"""The one table of a run's state changes (gateway/platform/runs/record/states.py), which the
product's rules and the tests' runs (runs_support.advance) both go through."""

from __future__ import annotations

import pytest

from gateway.kernel.errors import Conflict, InvalidRequest
from gateway.platform.runs.record.states import (
    HELD,
    LIVE,
    RUN_STATES,
    TERMINAL,
    TRANSITIONS,
    Event,
    allows,
    next_state,
    sole_source,
    sources,
    target_of,
)
from tests.platform.runs.runs_support import advance, new_run
from tests.support import World

EVENTS: list[Event] = list(TRANSITIONS)


def _reachable(start: str) -> set[str]:
    found, frontier = {start}, [start]
    while frontier:
        state = frontier.pop()
        for event in EVENTS:
            if allows(state, event) and (target := next_state(state, event)) not in found:
                found.add(target)
                frontier.append(target)
    return found


def test_every_state_is_reached_from_queued_and_every_run_can_end() -> None:
    assert _reachable("QUEUED") == set(RUN_STATES)
    for state in RUN_STATES:
        assert _reachable(state) & TERMINAL, state


def test_a_queued_run_is_claimed_before_anything_else_happens_to_it() -> None:
    # a runner claims a run before it starts it: the runner protocol refuses QUEUED -> INPROGRESS;
    # a run pinned to a worker that never comes fails unclaimed (`abandon`)
    assert {next_state("QUEUED", e) for e in EVENTS if allows("QUEUED", e)} == {
        "CLAIMED",
        "CANCELLED",
        "FAILED",
    }
    assert sources("abandon") == ["QUEUED"]
    with pytest.raises(Conflict, match="state: a QUEUED run cannot start"):
        next_state("QUEUED", "start")


def test_an_ended_run_only_resumes() -> None:
    for state in TERMINAL:
        assert [e for e in EVENTS if allows(state, e)] == ["resume"], state
        assert next_state(state, "resume") == "QUEUED"


def test_runners_work_in_the_held_states_and_a_run_ends_from_there() -> None:
    assert LIVE < HELD and not HELD & TERMINAL
    for event in ("error", "release", "expire"):
        assert TRANSITIONS[event].sources == HELD
    assert sources("succeed") == sources("fail") == ["INPROGRESS"]
    assert sole_source("claim") == "QUEUED" and target_of("claim") == "CLAIMED"
    with pytest.raises(ValueError):
        sole_source("start")  # three states may start


def test_cancel_ends_every_run_that_has_not_ended() -> None:
    assert set(sources("cancel")) == set(RUN_STATES) - TERMINAL
    assert target_of("cancel") == "CANCELLED"


def test_the_tests_move_runs_only_as_the_product_does(world: World) -> None:
    run_id = new_run(world)["run_id"]
    with pytest.raises(AssertionError, match="no runner holds the QUEUED run"):
        advance(world, run_id, "start")  # what the tests' own table allowed before
    with pytest.raises(InvalidRequest, match="state: a CLAIMED run cannot become BLOCKED"):
        advance(world, run_id, "claim", "block")  # the runner protocol's own refusal
    assert world.api("GET", f"/agent/runs/{run_id}").json()["state"] == "QUEUED"  # rolled back
    advance(world, run_id, "claim", "accept", "start", "block", "unblock", "succeed")
    timeline = world.api("GET", f"/agent/runs/{run_id}/timeline").json()["events"]
    moved = ["CLAIMED", "PENDING", "INPROGRESS", "BLOCKED", "INPROGRESS", "SUCCEEDED"]
    assert [event["state"] for event in timeline] == ["QUEUED", *moved]
    assert all(event["runner_uid"] for event in timeline[1:])  # a runner moved it each time
