"""A delivery that continued a work item says so (its `follow_ups`: the work item and the run it
was sent to), where its trace says `matched` and it lists no run; and a replay of a provider
delivery starts its runs again, joining the work item they belong to, while one that only named
the factory is a follow-up again. Both deployment shapes, @octokit/webhooks-examples payloads."""

from __future__ import annotations

from typing import Any

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
from tests.connections.test_provider_triggers import labeled_example
from tests.connections.test_work_items import mention, work_item, work_items
from tests.connections.test_work_items import shaped_world as shaped_world
from tests.providers.conftest import GithubExamples
from tests.support import World


def replayed(world: World, connection: dict[str, Any], delivery_id: str) -> dict[str, Any]:
    path = f"/provider-connections/{connection['uid']}/deliveries/{delivery_id}/replay"
    made = world.api("POST", path)
    assert made.status_code == 201, made.text
    return evaluated(world, connection, made.json()["delivery_id"])


def test_follow_ups_show_in_the_delivery_and_replays_join_the_work_item(
    shaped_world: World, github_examples: GithubExamples
) -> None:
    world, gw = shaped_world, shaped_world.client
    set_repositories(gw, world.factory_uid, "Codertocat/Hello-World")
    triage = automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
    made = connect(world, "github")
    labeled = labeled_example(github_examples)
    first = deliver(gw, made, signing.github(made["secret"], "issues", labeled, "gh-l1"))
    evaluated(world, made, first)
    (run,) = runs(gw, first)
    (item,) = work_items(world)

    # labeled again: matched, but a follow-up of the work item's run, not a run of its own
    second = deliver(gw, made, signing.github(made["secret"], "issues", labeled, "gh-l2"))
    answer = evaluated(world, made, second)
    assert answer["trace"]["outcome"] == "matched" and answer["runs"] == []
    follow_up = {"work_item_id": item["id"], "run_id": run.run_id}
    assert answer["follow_ups"] == [follow_up]
    listed = world.api("GET", f"/provider-connections/{made['uid']}/deliveries").json()
    by_id = {d["delivery_id"]: d for d in listed["deliveries"]}
    assert by_id[second]["follow_ups"] == [follow_up] and by_id[first]["follow_ups"] == []
    assert by_id[first]["runs"] == [{"automation_uid": triage, "run_id": run.run_id}]
    assert work_item(world, item["id"])["followup_count"] == 1

    # its replay is asked to run again: a new run, in the same work item; no follow-up
    replay = replayed(world, made, second)
    assert replay["trace"]["outcome"] == "matched" and replay["follow_ups"] == []
    (again,) = replay["runs"]
    assert again["automation_uid"] == triage and again["run_id"] != run.run_id
    item = work_item(world, item["id"])
    assert item["run_ids"] == [run.run_id, again["run_id"]]
    assert item["followup_count"] == 1 and len(work_items(world)) == 1

    # a mention starts nothing of its own: its replay is a follow-up again
    comment = mention(github_examples, "@fa please also check the docs")
    named = deliver(gw, made, signing.github(made["secret"], "issue_comment", comment, "gh-c"))
    assert evaluated(world, made, named)["follow_ups"] == [follow_up]
    replay = replayed(world, made, named)
    assert replay["runs"] == [] and replay["follow_ups"] == [follow_up]
    assert work_item(world, item["id"])["followup_count"] == 3
