"""Debug follow-ups delivered to a runner as a debug session of the failed run (SQLite and
PostgreSQL), or refused, 409, when no session can be opened: never accepted and dropped."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import update

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from tests.platform.runners.test_runner_api import Runner, get_run, new_run
from tests.support import World

SETUP = "environment_setup_failed"


def _failed_by(world: World, runner: Runner) -> str:
    run_id = new_run(world, "Set up and build")
    assert [run["run_id"] for run in runner.claim()] == [run_id]
    runner.on(run_id, "finish", outcome="FAILED", status_message="apt failed", error_code=SETUP)
    return run_id


def _follow_up(world: World, run_id: str, message: str) -> Any:
    return world.api("POST", f"/agent/runs/{run_id}/followups", json={"message": message})


def _timeline(world: World, run_id: str) -> list[tuple[str, str | None]]:
    events = world.api("GET", f"/agent/runs/{run_id}/timeline").json()["events"]
    return [(event["state"], event["runner_uid"]) for event in events]


def test_a_debug_follow_up_opens_a_session_on_the_runner_that_failed_the_run(world: World) -> None:
    runner = Runner(world, debug_sessions=True)
    run_id = _failed_by(world, runner)
    failure = get_run(world, run_id)["status_message"]

    first = _follow_up(world, run_id, "Why did apt fail?")
    assert first.json() == {"run_id": run_id, "state": "FAILED", "routing": "debug"}
    assert _timeline(world, run_id)[-1] == ("DEBUG_REQUESTED", runner.uid)
    assert Runner(world).claim() == []  # another runner of the team does not get it

    [session] = runner.claim()
    assert (session["run_id"], session["session"], session["state"]) == (run_id, "debug", "FAILED")
    assert [m["message"] for m in session["messages"]] == ["Why did apt fail?"]
    assert session["messages"][0]["routing"] == "debug"

    second = _follow_up(world, run_id, "Try the mirror.")
    assert second.json()["routing"] == "debug"
    beat = runner.on(run_id, "heartbeat")
    assert [m["message"] for m in beat["messages"]] == ["Try the mirror."]
    assert beat["cancel_requested"] is False
    runner.on(run_id, "messages", messages=[{"role": "agent", "text": "The mirror was down."}])
    runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="explained")

    run = get_run(world, run_id)
    assert run["state"] == "FAILED" and run["status_message"] == failure
    assert [state for state, _ in _timeline(world, run_id)] == [
        "QUEUED", "CLAIMED", "INPROGRESS", "FAILED", "DEBUG_REQUESTED", "DEBUG_OPENED",
        "DEBUG_ENDED",
    ]  # fmt: skip
    said = world.api("GET", f"/agent/runs/{run_id}/conversation").json()["messages"]
    assert [(m["kind"], m["routing"], m["text"]) for m in said[1:]] == [
        ("follow_up", "debug", "Why did apt fail?"),
        ("follow_up", "debug", "Try the mirror."),
        ("message", None, "The mirror was down."),
    ]
    # the window is still open: the next follow-up asks for a new session
    assert _follow_up(world, run_id, "Again?").json()["routing"] == "debug"
    assert runner.claim()[0]["messages"][-1]["message"] == "Again?"


def _refused(world: World, run_id: str, why: str) -> None:
    before = world.api("GET", f"/agent/runs/{run_id}/conversation").json()["messages"]
    answer = _follow_up(world, run_id, "Why?")
    assert answer.status_code == 409, answer.text
    assert answer.json()["code"] == "debug_session_unavailable"
    assert why in answer.json()["detail"] and "not delivered" in answer.json()["detail"]
    after = world.api("GET", f"/agent/runs/{run_id}/conversation").json()["messages"]
    assert after == before  # nothing stored
    assert get_run(world, run_id)["state"] == "FAILED"


def test_no_session_is_opened_by_a_runner_that_does_not_open_them(world: World) -> None:
    run_id = _failed_by(world, Runner(world))
    _refused(world, run_id, "does not open debug sessions")


def test_no_session_on_an_offline_runner(world: World) -> None:
    runner = Runner(world, debug_sessions=True)
    run_id = _failed_by(world, runner)

    async def long_gone(services: Services) -> None:
        async with services.database.transaction() as conn:
            await conn.execute(
                update(t.runners)
                .where(t.runners.c.uid == runner.uid)
                .values(last_seen_at=utcnow() - timedelta(hours=1))
            )

    world.client.run(long_gone)
    _refused(world, run_id, "is offline")


def test_a_session_given_back_ends_and_the_run_stays_failed(world: World) -> None:
    runner = Runner(world, debug_sessions=True)
    run_id = _failed_by(world, runner)
    _follow_up(world, run_id, "Look")
    runner.claim()
    assert runner.on(run_id, "release", reason="runner stopping")["state"] == "FAILED"
    assert _timeline(world, run_id)[-1] == ("DEBUG_ENDED", runner.uid)
    runner.on(run_id, "heartbeat", 409)
