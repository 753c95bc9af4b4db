"""POST /runner/finish (SQLite and PostgreSQL): several held runs finished in one call, each as
its own finish would, then the next runs claimed; and the cache of agents' keys, which a deleted
key leaves at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete

from gateway.foundation.services import Services
from gateway.foundation.store import tables as t
from gateway.kernel.security import hash_token
from tests.conftest import make_settings
from tests.metrics.scrape import parse, value
from tests.platform.runners.test_runner_api import (
    Runner,
    claim_dispatched,
    get_run,
    new_run,
    states,
)
from tests.support import GatewayClient, World


def finish_many(runner: Runner, runs: list[dict[str, Any]], status: int = 200, **more: Any) -> Any:
    return runner.call("/runner/finish", status, runs=runs, **more)


def succeeded(run_id: str, message: str = "ok") -> dict[str, Any]:
    return {"run_id": run_id, "outcome": "SUCCEEDED", "status_message": message}


def test_finish_several_runs_then_claim_the_next_ones(world: World) -> None:
    run_ids = [new_run(world, f"job {n}") for n in range(5)]
    runner = Runner(world)
    first = [run["run_id"] for run in runner.claim(2)]
    assert first == run_ids[:2]

    answer = finish_many(runner, [succeeded(run_id) for run_id in first], claim=2)
    assert [(item["run_id"], item["ok"], item["state"]) for item in answer["finished"]] == [
        (run_ids[0], True, "SUCCEEDED"),
        (run_ids[1], True, "SUCCEEDED"),
    ]
    assert answer["finished"][0]["status_message"]["message"] == "ok"
    # the next runs, claimed as /runner/claim would: oldest first, no more than asked
    assert [run["run_id"] for run in answer["runs"]] == run_ids[2:4]
    assert {run["state"] for run in answer["runs"]} == {"CLAIMED"}
    assert [run["attempt"] for run in answer["runs"]] == [1, 1]

    for run_id in first:
        assert get_run(world, run_id)["state"] == "SUCCEEDED"
        assert states(world, run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    for run_id in run_ids[2:4]:
        assert get_run(world, run_id)["state"] == "CLAIMED"
    assert get_run(world, run_ids[4])["state"] == "QUEUED"

    # without claim, nothing more is claimed; an empty list only claims
    answer = finish_many(runner, [succeeded(run_ids[2])])
    assert answer["runs"] == [] and answer["finished"][0]["ok"] is True
    answer = finish_many(runner, [], claim=10)
    assert answer["finished"] == [] and [run["run_id"] for run in answer["runs"]] == [run_ids[4]]
    # a finish is final: the same runs again are lease_lost and change nothing
    answer = finish_many(runner, [succeeded(run_id, "again") for run_id in first])
    assert [item["problem"]["code"] for item in answer["finished"]] == ["lease_lost"] * 2
    assert get_run(world, first[0])["status_message"]["message"] == "ok"


def test_each_run_is_finished_or_refused_as_its_own_finish_would_be(world: World) -> None:
    done, failed, cancelled, idle, theirs = (new_run(world, f"r{n}") for n in range(5))
    runner, other = Runner(world), Runner(world)
    assert len(runner.claim(4)) == 4
    assert [run["run_id"] for run in other.claim()] == [theirs]
    assert world.api("POST", f"/agent/runs/{cancelled}/cancel").status_code == 200

    endings = [
        succeeded(done),
        succeeded(done, "twice"),  # named twice: finished once
        {"run_id": failed, "outcome": "FAILED", "error_code": "exit_2", "transcript": "boom"},
        {"run_id": cancelled, "outcome": "CANCELLED"},  # acknowledges the cancel
        {"run_id": idle, "outcome": "CANCELLED"},  # nobody cancelled it: refused
        succeeded(theirs),  # another runner's
        succeeded("no-such-run"),
    ]
    answer = finish_many(runner, endings)
    results = [(item["run_id"], item["ok"]) for item in answer["finished"]]
    assert results == [(done, True), (done, False), (failed, True), (cancelled, True),
                       (idle, False), (theirs, False), ("no-such-run", False)]  # fmt: skip
    problems = [item["problem"] for item in answer["finished"] if not item["ok"]]
    assert [(p["status"], p["code"]) for p in problems] == [
        (409, "lease_lost"),
        (400, "invalid_request"),
        (409, "lease_lost"),
        (404, "not_found"),
    ]
    assert get_run(world, done)["status_message"]["message"] == "ok"
    assert states(world, done) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    run = get_run(world, failed)
    assert run["state"] == "FAILED" and run["status_message"]["error_code"] == "exit_2"
    assert run["session_link"].endswith(f"/api/v1/agent/runs/{failed}/transcript")
    transcript = world.api("GET", f"/agent/runs/{failed}/transcript", follow_redirects=False)
    assert transcript.status_code == 302
    assert world.client.get(transcript.headers["location"]).text == "boom"
    assert get_run(world, cancelled)["state"] == "CANCELLED"
    # the refused ones are as they were: still held, still finishable
    assert get_run(world, idle)["state"] == "CLAIMED"
    assert get_run(world, theirs)["state"] == "CLAIMED"
    assert runner.on(idle, "finish", outcome="SUCCEEDED")["state"] == "SUCCEEDED"
    assert other.on(theirs, "finish", outcome="SUCCEEDED")["state"] == "SUCCEEDED"


def test_a_claim_takes_no_more_than_asked(world: World) -> None:
    run_ids = {new_run(world, f"job {n}") for n in range(55)}
    runner = Runner(world)
    first = finish_many(runner, [], claim=50)["runs"]
    assert len(first) == 50 and {run["state"] for run in first} == {"CLAIMED"}
    rest = finish_many(runner, [succeeded(run["run_id"]) for run in first], claim=50)
    assert all(item["ok"] for item in rest["finished"])
    assert len(rest["runs"]) == 5
    assert {run["run_id"] for run in first + rest["runs"]} == run_ids


def test_bad_bodies_are_refused_whole(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    too_many = [succeeded(run_id)] * 51
    finish_many(runner, too_many, 400)
    finish_many(runner, [succeeded(run_id)], 400, claim=51)
    finish_many(runner, [{"run_id": run_id, "outcome": "DONE"}], 400)
    answer = world.api("POST", "/runner/finish", headers=world.user,
                       json={"runner_uid": runner.uid, "runs": []})  # fmt: skip
    assert answer.status_code == 403
    assert get_run(world, run_id)["state"] == "CLAIMED"  # none of them finished it


def _claims(world: World) -> dict[str, float]:
    scraped = parse(world.client.get("/metrics").text)
    return {result: value(scraped, "gateway_runner_claims_total", result=result)
            for result in ("claimed", "empty")}  # fmt: skip


def test_claims_made_by_a_finish_are_counted_as_by_a_claim(world: World) -> None:
    run_ids = [new_run(world, f"job {n}") for n in range(3)]
    runner = Runner(world)
    first = runner.claim(1)[0]["run_id"]
    before = _claims(world)
    answer = finish_many(runner, [succeeded(first)], claim=5)  # the other two, in one go
    assert [run["run_id"] for run in answer["runs"]] == run_ids[1:]
    finish_many(runner, [succeeded(run_ids[1])], claim=1)  # nothing queued: one empty claim
    finish_many(runner, [succeeded(run_ids[2])])  # no claim asked: nothing counted
    after = _claims(world)
    assert after["claimed"] - before["claimed"] == 2
    assert after["empty"] - before["empty"] == 1


def test_the_claim_waits_for_a_run_when_none_is_queued(world: World) -> None:
    runner = Runner(world)
    created: list[str] = []
    later = threading.Timer(0.3, lambda: created.append(new_run(world, "late")))
    later.start()
    try:
        answer = finish_many(runner, [], claim=1, wait_s=10)
    finally:
        later.join()
    assert [run["run_id"] for run in answer["runs"]] == created


@pytest.fixture
def short_lease(database_url: str) -> Iterator[World]:
    settings = make_settings(database_url, run_lease_s="0.4")
    with GatewayClient.running(settings) as client:
        yield World.create(client)


def test_a_run_whose_lease_ran_out_and_was_taken_back_is_not_finished(short_lease: World) -> None:
    world = short_lease
    run_id = new_run(world)
    runner = Runner(world)
    assert [run["run_id"] for run in runner.claim()] == [run_id]
    time.sleep(0.5)  # its lease runs out
    # taken back by another runner's claim, and claimed again (a second attempt)
    assert [run["attempt"] for run in Runner(world).claim()] == [2]
    answer = finish_many(runner, [succeeded(run_id)], claim=1)
    assert answer["finished"][0]["ok"] is False
    assert answer["finished"][0]["problem"]["code"] == "lease_lost"
    assert answer["runs"] == []
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "QUEUED", "CLAIMED"]


def test_a_run_whose_lease_ran_out_unnoticed_is_finished(short_lease: World) -> None:
    """Nobody collected the expired lease: the run is still its runner's, and finishes (the
    finish used to collect the caller's own lease first and answer `lease_lost`)."""
    world = short_lease
    run_id = new_run(world)
    runner = Runner(world)
    assert [run["run_id"] for run in runner.claim()] == [run_id]
    time.sleep(0.5)  # its lease runs out
    answer = finish_many(runner, [succeeded(run_id)], claim=1)
    assert answer["finished"][0]["ok"] is True, answer
    assert answer["runs"] == []
    assert get_run(world, run_id)["state"] == "SUCCEEDED"
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]


# --- the cache of agents' keys ------------------------------------------------------------------


def test_a_deleted_agents_key_stops_working_at_once(world: World) -> None:
    created = world.api("POST", "/agent/identities", json={"name": "temporary"})
    assert created.status_code == 201, created.text
    agent = {"Authorization": f"Bearer {created.json()['api_key']}"}
    runner = Runner(world, headers=agent)
    for _ in range(3):  # authenticated once, then from the cache
        assert runner.claim() == []
    key_hash = hash_token(created.json()["api_key"])
    assert world.client.services.agent_keys.get(key_hash) is not None
    deleted = world.api("DELETE", f"/agent/identities/{created.json()['uid']}")
    assert deleted.status_code == 204
    answer = world.api("POST", "/runner/claim", headers=agent,
                       json={"runner_uid": runner.uid, "wait_s": 0})  # fmt: skip
    assert answer.status_code == 401 and answer.json()["code"] == "unauthenticated"


def test_a_key_deleted_elsewhere_stops_working_within_the_ttl(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bound, made short (and given back: the module's tests share the gateway)
    monkeypatch.setattr(world.client.services.agent_keys, "ttl_s", 0.3)
    runner = Runner(world)
    assert runner.claim() == []  # cached now

    async def delete_keys_directly(services: Services) -> None:  # as another process would
        async with services.database.transaction() as conn:
            keys = t.api_keys
            await conn.execute(delete(keys).where(keys.c.principal_uid == world.agent_uid))

    world.client.run(delete_keys_directly)
    time.sleep(0.35)
    answer = world.api("POST", "/runner/claim", headers=world.agent,
                       json={"runner_uid": runner.uid, "wait_s": 0})  # fmt: skip
    assert answer.status_code == 401


def test_user_keys_are_not_cached(world: World) -> None:
    assert world.api("GET", "/agent/runs").status_code == 200
    assert world.client.services.agent_keys.get(hash_token(world.user_key)) is None
    Runner(world)
    assert world.client.services.agent_keys.get(hash_token(world.agent_key)) is not None


def test_runs_failed_in_one_call_each_reach_the_factory_inbox(world: World) -> None:
    """The batch finish records its timeline in one statement; the inbox still hears of each
    failure with its own reason, in the same transaction."""
    dispatched = []
    for title in ("first", "second", "third"):
        answer = world.api(
            "POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p", "title": title}
        )
        assert answer.status_code == 201, answer.text
        dispatched.append(answer.json()["run_id"])
    runner = Runner(world)
    held = claim_dispatched(runner, 3)
    assert sorted(held) == sorted(dispatched)
    outcomes = [
        {"run_id": held[0], "outcome": "FAILED", "status_message": "tests failed"},
        {"run_id": held[1], "outcome": "FAILED", "status_message": "no disk"},
        succeeded(held[2]),
    ]
    answer = finish_many(runner, outcomes)
    assert [item["ok"] for item in answer["finished"]] == [True, True, True]

    inbox = world.api("GET", "/factory-inbox")
    assert inbox.status_code == 200, inbox.text
    notices = {n["run_id"]: n for n in inbox.json()["notifications"]}
    assert set(notices) == {held[0], held[1]}  # the succeeded run notifies no one
    assert {n["kind"] for n in notices.values()} == {"run_failed"}
    assert notices[held[0]]["detail"] == "tests failed"
    assert notices[held[1]]["detail"] == "no disk"
