"""The event log and its live stream (docs/events.md): a run's life is run.created,
run.state_changed ... run.succeeded, written with the change; GET /events/stream shows them
team-scoped as Server-Sent Events and resumes after Last-Event-ID."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from tests.platform.runs.runs_support import advance, new_run
from tests.subscriptions.served import served
from tests.support import World, scaled

LIFE = [
    ("run.created", "QUEUED"),
    ("run.state_changed", "CLAIMED"),
    ("run.state_changed", "INPROGRESS"),
    ("run.state_changed", "SUCCEEDED"),
    ("run.succeeded", "SUCCEEDED"),
]


def messages(lines: Iterator[str], count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The next `count` SSE messages (comments skipped) as {id, event, data}."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    deadline = time.monotonic() + scaled(timeout)
    for line in lines:
        assert time.monotonic() < deadline, f"only {found}"
        if line.startswith(":"):
            continue
        if not line:
            if current:
                found.append(current)
                current = {}
            if len(found) == count:
                return found
            continue
        name, _, value = line.partition(": ")
        current[name] = json.loads(value) if name == "data" else value
    raise AssertionError(f"stream ended after {found}")


def test_a_runs_life_is_streamed_and_resumed(world: World) -> None:
    headers = {**world.user, "Accept": "text/event-stream"}
    with (
        served(world.client) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=scaled(30)) as http,
    ):
        refused = http.get("/events/stream?types=run.exploded", headers=world.user)
        assert refused.status_code == 400 and refused.json()["detail"].startswith("types[0]:")
        with http.stream("GET", "/events/stream?types=run.*", headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            run = new_run(world)
            advance(world, run["run_id"], "claim", "start", "succeed")
            got = messages(lines, len(LIFE))
        assert [(m["event"], m["data"]["data"]["state"]) for m in got] == LIFE
        for message in got:
            assert message["data"]["type"] == message["event"]
            assert set(message["data"]) == {"type", "timestamp", "data"}
            assert message["data"]["data"]["run_id"] == run["run_id"]
            assert message["data"]["data"]["factory_uid"] is None
        assert got[0]["data"]["data"]["created_at"].replace("Z", "") == run["created_at"].replace(
            "Z", ""
        )
        ids = [int(m["id"]) for m in got]
        assert ids == sorted(ids)

        # resumed after the second: the three after it, and nothing of another team's
        other = {"Authorization": world.stranger["Authorization"]}
        resume = {**headers, "Last-Event-ID": got[1]["id"]}
        with http.stream("GET", "/events/stream", headers=resume) as stream:
            again = messages(stream.iter_lines(), 3)
        assert [m["id"] for m in again] == [m["id"] for m in got[2:]]
        assert [m["data"] for m in again] == [m["data"] for m in got[2:]]
        with http.stream("GET", "/events/stream", headers={**other, "Last-Event-ID": "0"}) as s:
            lines = s.iter_lines()
            assert next(lines) == ": connected"


def test_a_follow_up_is_an_event(world: World) -> None:
    """run.followup_received, and the state change it brings (an ended run runs again)."""
    run = new_run(world)
    advance(world, run["run_id"], "claim", "start", "succeed")
    with (
        served(world.client) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=scaled(30)) as http,
    ):
        wanted = "/events/stream?types=run.followup_received,run.state_changed"
        with http.stream("GET", wanted, headers=world.user) as stream:
            lines = stream.iter_lines()
            answer = world.api(
                "POST", f"/agent/runs/{run['run_id']}/followups", json={"message": "and more"}
            )
            assert answer.status_code == 200, answer.text
            got = messages(lines, 2)
    assert [m["event"] for m in got] == ["run.state_changed", "run.followup_received"]
    followup = got[1]["data"]["data"]
    assert followup["run_id"] == run["run_id"] and followup["message"] == "and more"
    assert followup["state"] == got[0]["data"]["data"]["state"] == "QUEUED"
