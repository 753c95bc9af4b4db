"""The runner protocol over the API (SQLite and PostgreSQL): claim with a lease, heartbeat,
progress, artifacts, usage, finish; leases that run out; cancel and interrupt reaching the
runner; who may hold what."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from gateway.kernel.types import Message
from gateway.platform.runners.leases import MAX_ATTEMPTS
from tests.conftest import make_settings
from tests.support import GatewayClient, World, eventually

HELD = "/runner/runs/{}"


class Runner:
    """One registered runner of the world's agent, calling the protocol."""

    def __init__(self, world: World, headers: dict[str, str] | None = None, **spec: Any) -> None:
        self.world = world
        self.headers = headers or world.agent
        answer = world.api(
            "POST", "/runner/register", headers=self.headers, json={"name": "r", **spec}
        )
        assert answer.status_code == 201, answer.text
        self.uid = answer.json()["runner_uid"]

    def call(self, path: str, status: int = 200, **body: Any) -> Any:
        answer = self.world.api(
            "POST", path, headers=self.headers, json={"runner_uid": self.uid, **body}
        )
        assert answer.status_code == status, answer.text
        return answer.json()

    def claim(self, max_runs: int = 1) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = self.call("/runner/claim", max_runs=max_runs, wait_s=0)["runs"]
        return runs

    def on(self, run_id: str, action: str, status: int = 200, **body: Any) -> Any:
        return self.call(HELD.format(run_id) + "/" + action, status, **body)


def claim_dispatched(runner: Runner, count: int) -> list[str]:
    """The ids of `count` runs the runner claims, over as many calls as it takes: a dispatched
    run whose row the task binder holds locked is skipped (SKIP LOCKED) and claimed next time."""
    held: list[str] = []

    def claimed_all() -> bool:
        held.extend(run["run_id"] for run in runner.claim(count - len(held)))
        return len(held) >= count

    eventually(claimed_all, timeout=10)
    return held


def new_run(world: World, prompt: str = "do it") -> str:
    answer = world.api("POST", "/agent/runs", json={"prompt": prompt})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["run_id"])


def get_run(world: World, run_id: str) -> dict[str, Any]:
    answer = world.api("GET", f"/agent/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    run: dict[str, Any] = answer.json()
    return run


def states(world: World, run_id: str) -> list[str]:
    answer = world.api("GET", f"/agent/runs/{run_id}/timeline")
    assert answer.status_code == 200, answer.text
    return [event["state"] for event in answer.json()["events"]]


def test_a_run_goes_from_queued_to_succeeded_through_a_runner(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world, host="box-1", concurrency=2, version="1.0")
    claimed = runner.claim()
    assert claimed[0]["run_id"] == run_id
    assert claimed[0]["attempt"] == 1 and claimed[0]["prompt"] == "do it"
    assert get_run(world, run_id)["state"] == "CLAIMED"

    beat = runner.on(run_id, "heartbeat")
    assert beat["cancel_requested"] is False and beat["interrupt_requested"] is False
    link = "https://sessions.example.test/s/1"
    runner.on(run_id, "progress", state="INPROGRESS", status_message="step 1", session_link=link)
    run = get_run(world, run_id)
    assert run["state"] == "INPROGRESS" and run["session_link"] == link
    assert run["status_message"]["message"] == "step 1" and "started_at" in run

    runner.on(run_id, "messages", messages=[{"role": "agent", "text": "looking"}])
    runner.on(run_id, "usage", model_id="m-1", input_tokens=100, output_tokens=20,
              cost_usd={"llm": 0.5, "compute": 0.25})  # fmt: skip
    # a cumulative snapshot: it replaces the one before
    runner.on(run_id, "usage", model_id="m-1", input_tokens=101, output_tokens=21,
              cost_usd={"llm": 0.625, "compute": 0.25})  # fmt: skip
    finished = runner.on(
        run_id, "finish", outcome="SUCCEEDED", status_message="all done", transcript="out\nerr\n"
    )
    assert finished["state"] == "SUCCEEDED"
    run = get_run(world, run_id)
    assert run["status_message"]["message"] == "all done"
    assert run["session_link"] == link  # the runner's own session link is kept

    # finishing twice, or anything after, is a clear 409 and changes nothing
    again = world.api("POST", HELD.format(run_id) + "/finish", headers=world.agent,
                      json={"runner_uid": runner.uid, "outcome": "FAILED"})  # fmt: skip
    assert again.status_code == 409 and again.json()["code"] == "lease_lost"
    assert get_run(world, run_id)["state"] == "SUCCEEDED"
    runner.on(run_id, "heartbeat", 409)

    assert states(world, run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]
    usage = world.api("GET", f"/agent/runs/{run_id}/usage").json()
    assert (usage["input_tokens"], usage["output_tokens"]) == (101, 21)
    assert usage["cost_usd"] == pytest.approx(0.875)
    by_component = {line["component"]: line["cost_usd"] for line in usage["components"]}
    assert by_component == pytest.approx({"llm": 0.625, "compute": 0.25})

    transcript = world.api("GET", f"/agent/runs/{run_id}/transcript", follow_redirects=False)
    assert transcript.status_code == 302
    content = world.client.get(transcript.headers["location"])  # no credentials needed
    assert content.status_code == 200 and content.text == "out\nerr\n"

    workers = world.api("GET", "/agent/workers").json()["workers"]
    mine = [w for w in workers if w["uid"] == runner.uid]
    assert mine and mine[0]["online"] and mine[0]["host"] == "box-1"
    assert mine[0]["concurrency"] == 2 and mine[0]["runs_held"] == 0


def test_finish_without_progress_passes_inprogress_and_links_the_transcript(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    assert [run["run_id"] for run in runner.claim()] == [run_id]
    runner.on(run_id, "finish", outcome="FAILED", status_message="exit 3", error_code="exit_3",
              transcript="boom")  # fmt: skip
    run = get_run(world, run_id)
    assert run["state"] == "FAILED"
    assert run["status_message"] == {"message": "exit 3", "error_code": "exit_3",
                                     "retryable": False}  # fmt: skip
    assert run["session_link"].endswith(f"/api/v1/agent/runs/{run_id}/transcript")
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "FAILED"]


def test_only_agent_keys_run_runners_and_only_their_teams_runs(world: World) -> None:
    answer = world.api("POST", "/runner/register", json={"name": "r"})  # a user key
    assert answer.status_code == 403
    run_id = new_run(world)
    stranger_agent = _agent_of_other_team(world)
    outsider = Runner(world, headers=stranger_agent)
    assert outsider.claim(10) == []
    mine = Runner(world)
    assert [run["run_id"] for run in mine.claim()] == [run_id]
    # another team's runner: not found; another runner of the team: not its run
    outsider.on(run_id, "heartbeat", 404)
    Runner(world).on(run_id, "heartbeat", 409)
    # a runner uid belongs to its agent
    answer = world.api("POST", HELD.format(run_id) + "/heartbeat", headers=stranger_agent,
                       json={"runner_uid": mine.uid})  # fmt: skip
    assert answer.status_code == 404


def _agent_of_other_team(world: World) -> dict[str, str]:
    async def make(services: Services) -> str:
        async with services.database.transaction() as conn:
            _, key = await identities.create_agent(conn, world.other_team_uid, "outsider")
        return key

    return {"Authorization": f"Bearer {world.client.run(make)}"}


def test_a_factory_runner_claims_only_that_factorys_runs(world: World) -> None:
    own = new_run(world)
    dispatched = world.api("POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p"})
    assert dispatched.status_code == 201, dispatched.text
    factory_run = dispatched.json()["run_id"]
    runner = Runner(world, factory_uid=world.factory_uid)
    assert claim_dispatched(runner, 1) == [factory_run]
    assert runner.claim(10) == []
    assert [run["run_id"] for run in Runner(world).claim(10)] == [own]
    answer = world.api("POST", "/runner/register", headers=world.agent,
                       json={"name": "r", "factory_uid": "nope"})  # fmt: skip
    assert answer.status_code == 404


def test_cancel_and_interrupt_reach_the_runner_at_its_next_heartbeat(world: World) -> None:
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "progress", state="INPROGRESS", status_message="running")
    assert world.api("POST", f"/agent/runs/{run_id}/interrupt").status_code == 202
    assert runner.on(run_id, "heartbeat")["interrupt_requested"] is True
    assert runner.on(run_id, "heartbeat")["interrupt_requested"] is False  # reported once

    # a CANCELLED outcome for a run nobody cancelled is refused
    runner.on(run_id, "finish", 400, outcome="CANCELLED")
    cancelled = world.api("POST", f"/agent/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.text == run_id
    beat = runner.on(run_id, "heartbeat")
    assert beat["cancel_requested"] is True and beat["state"] == "CANCELLED"
    # progress after the cancel does not revive the run
    runner.on(run_id, "progress", state="INPROGRESS", status_message="still going")
    assert get_run(world, run_id)["state"] == "CANCELLED"
    runner.on(run_id, "finish", outcome="CANCELLED", transcript="terminated")
    run = get_run(world, run_id)
    assert run["state"] == "CANCELLED"
    # the status says what happened, not what the runner last reported ("running")
    assert run["status_message"] == {"message": "cancelled", "error_code": None,
                                     "retryable": False}  # fmt: skip
    runner.on(run_id, "heartbeat", 409)
    assert states(world, run_id)[-1] == "CANCELLED"


def test_release_gives_the_run_back_and_the_claim_counts(world: World) -> None:
    run_id = new_run(world)
    first = Runner(world)
    first.claim()
    assert first.on(run_id, "release", reason="shutting down")["state"] == "QUEUED"
    again = Runner(world).claim()
    assert again[0]["run_id"] == run_id and again[0]["attempt"] == 2
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "QUEUED", "CLAIMED"]


def test_artifacts_join_the_run_its_task_and_download_through_signed_urls(world: World) -> None:
    dispatched = world.api("POST", f"/factory/{world.factory_uid}/runs", json={"prompt": "p"})
    run_id = dispatched.json()["run_id"]
    tasks_of = f"/factory/{world.factory_uid}/tasks"
    eventually(lambda: world.api("GET", tasks_of).json()["tasks"])  # bound after the 201
    runner = Runner(world)
    runner.claim()
    content = b"report\n\x00\x01"
    file = runner.on(run_id, "artifacts", 201, artifact_type="FILE", filename="report.bin",
                     filepath="out/report.bin", content_base64=base64.b64encode(content).decode(),
                     description="the report")  # fmt: skip
    runner.on(run_id, "artifacts", 201, artifact_type="PULL_REQUEST",
              url="https://github.com/o/r/pull/7", branch="fix-7", title="Fix 7",
              state="open")  # fmt: skip
    runner.on(run_id, "artifacts", 400, artifact_type="PULL_REQUEST")  # no url
    runner.on(run_id, "artifacts", 400, artifact_type="FILE", filename="x", content_base64="%%")
    listed = get_run(world, run_id)["artifacts"]
    assert [item["artifact_type"] for item in listed] == ["FILE", "PULL_REQUEST"]
    assert listed[0]["data"]["artifact_uid"] == file["artifact_uid"]
    assert listed[1]["data"] == {"url": "https://github.com/o/r/pull/7", "branch": "fix-7",
                                 "title": "Fix 7", "state": "open"}  # fmt: skip

    details = world.api("GET", f"/agent/artifacts/{file['artifact_uid']}").json()
    assert details["data"]["filename"] == "report.bin"
    assert details["data"]["size_bytes"] == len(content)
    downloaded = world.client.get(details["data"]["download_url"])
    assert downloaded.content == content
    assert world.client.get(details["data"]["download_url"] + "x").status_code == 404
    redirect = world.api("GET", f"/agent/artifacts/{file['artifact_uid']}/download",
                         follow_redirects=False)  # fmt: skip
    assert redirect.status_code == 302
    # another team sees nothing
    hidden = world.api("GET", f"/agent/artifacts/{file['artifact_uid']}", headers=world.stranger)
    assert hidden.status_code == 404

    tasks = world.api("GET", tasks_of, params={"full_list": "true"}).json()["tasks"]
    outputs = {(o["kind"], o["title"]): o["url"] for o in tasks[0]["outputs"]}
    assert outputs == {
        ("pull_request", "Fix 7"): "https://github.com/o/r/pull/7",
        ("file", "report.bin"): f"artifact:{file['artifact_uid']}",
    }


@pytest.fixture
def short_lease(database_url: str) -> Iterator[World]:
    settings = make_settings(database_url, run_lease_s="0.4")
    with GatewayClient.running(settings) as client:
        yield World.create(client)


def test_an_expired_lease_requeues_the_run_then_fails_it(short_lease: World) -> None:
    world = short_lease
    run_id = new_run(world)
    holders = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        runner = Runner(world)
        claimed = runner.claim()  # collects the previous holder's expired lease first
        assert [(run["run_id"], run["attempt"]) for run in claimed] == [(run_id, attempt)]
        holders.append(runner)
        time.sleep(0.5)  # the lease runs out: the runner died
    assert Runner(world).claim() == []  # collects the last one
    for runner in holders:  # too late: each lost the run when its lease was collected
        runner.on(run_id, "finish", 409, outcome="SUCCEEDED")
    run = get_run(world, run_id)
    assert run["state"] == "FAILED"
    assert run["status_message"]["error_code"] == "lease_expired"
    assert states(world, run_id) == ["QUEUED"] + ["CLAIMED", "QUEUED"] * 2 + ["CLAIMED", "FAILED"]


def test_a_lapsed_lease_nobody_collected_is_still_its_runners(short_lease: World) -> None:
    """Nobody else can have the run before its expired lease is collected: the holder's late
    heartbeat renews the lease, and its finish is accepted."""
    world = short_lease
    run_id = new_run(world)
    runner = Runner(world)
    [claimed] = runner.claim()
    time.sleep(0.5)  # the lease runs out; no other runner calls meanwhile
    beat = runner.on(run_id, "heartbeat")
    assert beat["state"] == "CLAIMED" and beat["lease_expires_at"] > claimed["lease_expires_at"]
    time.sleep(0.5)  # out again
    assert runner.on(run_id, "finish", outcome="SUCCEEDED")["state"] == "SUCCEEDED"
    assert states(world, run_id) == ["QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"]


def test_a_runners_call_collects_its_other_lapsed_leases(short_lease: World) -> None:
    """Only the runs a call names are spared: the caller's other expired leases are collected
    as anyone's are."""
    world = short_lease
    first, second = new_run(world, "one"), new_run(world, "two")
    runner = Runner(world)
    assert [run["run_id"] for run in runner.claim(2)] == [first, second]
    time.sleep(0.5)  # both leases run out
    runner.on(first, "heartbeat")
    assert get_run(world, second)["state"] == "QUEUED"
    runner.on(second, "heartbeat", 409)
    assert runner.on(first, "finish", outcome="SUCCEEDED")["state"] == "SUCCEEDED"


@pytest.fixture
def one_second_lease(database_url: str) -> Iterator[World]:
    """Room for a heartbeat's round trip on a busy host (0.7 s past each 0.3 s wait)."""
    with GatewayClient.running(make_settings(database_url, run_lease_s="1.0")) as client:
        yield World.create(client)


def test_heartbeats_keep_the_lease(one_second_lease: World) -> None:
    world = one_second_lease
    run_id = new_run(world)
    runner = Runner(world)
    runner.claim()
    for _ in range(7):  # 2.1 s in all, twice the lease
        time.sleep(0.3)
        runner.on(run_id, "heartbeat")
    assert Runner(world).claim() == []
    assert runner.on(run_id, "finish", outcome="SUCCEEDED")["state"] == "SUCCEEDED"


def test_follow_ups_and_their_mode_reach_the_runner(world: World) -> None:
    run_id = new_run(world, "first")
    followups = f"/agent/runs/{run_id}/followups"
    queued = world.api("POST", followups, json={"message": "plan it first", "mode": "plan"})
    assert queued.status_code == 200, queued.text
    runner = Runner(world)
    (claimed,) = runner.claim()
    assert claimed["mode"] == "plan"
    assert [(m["message"], m["routing"], m["mode"]) for m in claimed["messages"]] == [
        ("plan it first", "queued", "plan")
    ]
    runner.on(run_id, "progress", state="INPROGRESS")

    # into the live session: handed over by the next heartbeat, once
    live = world.api("POST", followups, json={"message": "also the tests", "mode": "plan"})
    assert live.status_code == 200 and live.json()["routing"] == "injected"
    beat = runner.on(run_id, "heartbeat")
    assert [(m["message"], m["routing"]) for m in beat["messages"]] == [
        ("also the tests", "injected")
    ]
    assert beat["messages"][0]["mode"] is None  # it runs in the session's mode
    assert runner.on(run_id, "heartbeat")["messages"] == []
    runner.on(run_id, "finish", outcome="SUCCEEDED")

    # a follow-up to the ended run starts a new execution, in the mode it names
    again = world.api("POST", followups, json={"message": "one more thing"})
    assert again.status_code == 200 and again.json()["routing"] == "resumed"
    (reclaimed,) = runner.claim()
    assert reclaimed["mode"] == "normal"  # the newest queued follow-up names none: the run's own
    assert [m["message"] for m in reclaimed["messages"]] == [
        "plan it first",
        "also the tests",
        "one more thing",
    ]


def test_a_claim_for_a_runner_that_hung_up_is_rolled_back(world: World) -> None:
    """A stopping runner cuts its long-poll short: runs claimed for it as it hung up stay
    QUEUED (else they would wait out a lease nobody renews)."""
    run_id = new_run(world)
    runner = Runner(world)
    body = orjson.dumps({"runner_uid": runner.uid, "max_runs": 1, "wait_s": 0})
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        # the body, then (checked without waiting, as Starlette does) the client is gone
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    path = "/api/v1/runner/claim"
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
        "headers": [(b"authorization", f"Bearer {world.agent_key}".encode()),
                    (b"content-length", str(len(body)).encode())],
        "state": dict(world.client.app_state),
    }  # fmt: skip
    assert world.client.portal is not None
    world.client.portal.call(world.client.app, scope, receive, send)
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert orjson.loads(answer) == {"runs": []}
    assert get_run(world, run_id)["state"] == "QUEUED"
    assert [run["run_id"] for run in runner.claim()] == [run_id]  # for a runner still there
