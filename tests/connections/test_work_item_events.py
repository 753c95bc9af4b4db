"""`work_item.created` and `work_item.stage_changed` on the live stream: a GitHub issue makes a
work item (TRIAGE), its run's end moves it (CANCELLED), each written with the change."""

from __future__ import annotations

import httpx

from tests.connections import signing
from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    trigger,
)
from tests.providers.conftest import GithubExamples
from tests.subscriptions.served import served
from tests.subscriptions.test_event_stream import messages
from tests.support import World, scaled


def test_a_work_items_life_is_streamed(world: World, github_examples: GithubExamples) -> None:
    gw = world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_created"))
    made = connect(world, "github")
    opened = next(p for p in github_examples["issues"] if p["action"] == "opened")
    wanted = "/events/stream?types=work_item.*"
    with (
        served(gw) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=scaled(30)) as http,
        http.stream("GET", wanted, headers=world.user) as stream,
    ):
        lines = stream.iter_lines()
        first = deliver(gw, made, signing.github(made["secret"], "issues", opened, "gh-1"))
        evaluated(world, made, first)
        (run,) = runs(gw, first)
        (created,) = messages(lines, 1)
        cancelled = world.api("POST", f"/agent/runs/{run.run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        (changed,) = messages(lines, 1)
    assert created["event"] == "work_item.created"
    item = created["data"]["data"]
    assert item["factory_uid"] == world.factory_uid and item["stage"] == "TRIAGE"
    assert item["run_ids"] == [run.run_id] and item["followup_count"] == 0
    assert item["source"] == {
        "provider": "github",
        "kind": "issue",
        "ref": "Codertocat/Hello-World#1",
        "url": "https://github.com/Codertocat/Hello-World/issues/1",
    }
    assert "previous_stage" not in item
    listed = world.api("GET", f"/factory/{world.factory_uid}/work-items/{item['work_item_id']}")
    assert listed.status_code == 200, listed.text
    assert changed["event"] == "work_item.stage_changed"
    moved = changed["data"]["data"]
    assert moved["work_item_id"] == item["work_item_id"]
    assert (moved["previous_stage"], moved["stage"]) == ("TRIAGE", "CANCELLED")
    assert moved["run_ids"] == [run.run_id] and moved["source"] == item["source"]
    assert moved["stage"] == listed.json()["stage"]
