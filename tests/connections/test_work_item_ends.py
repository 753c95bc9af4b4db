"""How a work item ends, end to end on both deployment shapes with @octokit/webhooks-examples'
payloads (GitHub's `pull_request` `closed` example, merged or not) and GitLab's documented merge
request hook: a merged pull request completes the issue's work item whose run opened it, and
the issues its description closes (`Fixes #1`); one closed unmerged cancels its own work item; a
GitLab merge request merged completes the issue it closes. Each move fires the factory's
`work_item_stage_changed` triggers once, and a work item already ended stays where it is."""

from __future__ import annotations

import copy
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
from tests.connections.test_work_items import runs_of, work_item, work_items
from tests.connections.test_work_items import shaped_world as shaped_world
from tests.platform.runners.test_runner_api import Runner
from tests.providers.conftest import GithubExamples, fixture
from tests.support import World

PULL = "https://github.com/Codertocat/Hello-World/pull/2"  # the example's pull request


def closed_pull(examples: GithubExamples, merged: bool, body: str | None = None) -> Any:
    example = next(p for p in examples["pull_request"] if p["action"] == "closed")
    closed = copy.deepcopy(example)
    closed["pull_request"]["merged"] = merged
    if body is not None:
        closed["pull_request"]["body"] = body
    assert closed["pull_request"]["html_url"] == PULL
    return closed


def on_stage(world: World, *stages: str) -> str:
    return automation(
        world,
        world.factory_uid,
        "on " + "/".join(stages),
        trigger("factory", "work_item_stage_changed", stages=list(stages)),
    )


def github_issue(world: World, examples: GithubExamples) -> tuple[dict[str, Any], str, str]:
    """The labeled example (issue #1) through a GitHub connection: (connection, its run, its
    work item)."""
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "triage", trigger("github", "issue_labeled"))
    made = connect(world, "github")
    sent = signing.github(made["secret"], "issues", labeled_example(examples), "gh-labeled")
    first = deliver(world.client, made, sent)
    evaluated(world, made, first)
    (run,) = runs(world.client, first)
    (item,) = work_items(world)
    return made, str(run.run_id), str(item["id"])


def test_a_merged_pull_request_completes_the_work_item_whose_run_opened_it(
    shaped_world: World, github_examples: GithubExamples
) -> None:
    world = shaped_world
    done = on_stage(world, "DONE")
    made, run_id, item_id = github_issue(world, github_examples)
    runner = Runner(world)
    runner.claim()
    runner.on(run_id, "artifacts", 201, artifact_type="PULL_REQUEST", url=PULL,
              branch="fix-1", title="Fix the spelling")  # fmt: skip
    runner.on(run_id, "finish", outcome="FAILED", status_message="CI is red; over to you.")
    assert work_item(world, item_id)["stage"] == "IN_REVIEW"

    # closed unmerged: not this work item's end (it is no work item of its own either)
    unmerged = closed_pull(github_examples, merged=False)
    sent = signing.github(made["secret"], "pull_request", unmerged, "gh-closed")
    evaluated(world, made, deliver(world.client, made, sent))
    assert work_item(world, item_id)["stage"] == "IN_REVIEW"

    merged = closed_pull(github_examples, merged=True)
    sent = signing.github(made["secret"], "pull_request", merged, "gh-merged")
    delivery_id = deliver(world.client, made, sent)
    evaluated(world, made, delivery_id)
    assert runs(world.client, delivery_id) == []
    item = work_item(world, item_id)
    assert item["stage"] == "DONE" and item["run_ids"] == [run_id]
    (staged,) = runs_of(world, done)
    assert staged.metadata["work_item_id"] == item_id
    assert (staged.metadata["from_stage"], staged.metadata["to_stage"]) == ("IN_REVIEW", "DONE")

    # GitHub sends the merge again (a redelivery with a new id): already ended, nothing fires
    again = signing.github(made["secret"], "pull_request", merged, "gh-merged-again")
    evaluated(world, made, deliver(world.client, made, again))
    assert len(runs_of(world, done)) == 1


def test_a_merged_pull_request_completes_the_issues_it_closes(
    shaped_world: World, github_examples: GithubExamples
) -> None:
    world = shaped_world
    done = on_stage(world, "DONE")
    made, _, item_id = github_issue(world, github_examples)
    assert work_item(world, item_id)["stage"] == "TRIAGE"
    merged = closed_pull(github_examples, merged=True, body="Spelling.\n\nFixes #1, see #7")
    sent = signing.github(made["secret"], "pull_request", merged, "gh-merged")
    evaluated(world, made, deliver(world.client, made, sent))
    assert work_item(world, item_id)["stage"] == "DONE"
    (staged,) = runs_of(world, done)
    assert staged.metadata["to_stage"] == "DONE"


def test_a_pull_request_closed_unmerged_cancels_its_own_work_item(
    shaped_world: World, github_examples: GithubExamples
) -> None:
    world = shaped_world
    cancelled = on_stage(world, "CANCELLED")
    set_repositories(world.client, world.factory_uid, "Codertocat/Hello-World")
    automation(world, world.factory_uid, "review", trigger("github", "pull_request_opened"))
    made = connect(world, "github")
    opened = next(p for p in github_examples["pull_request"] if p["action"] == "opened")
    first = deliver(world.client, made, signing.github(made["secret"], "pull_request", opened))
    evaluated(world, made, first)
    (item,) = work_items(world)
    assert item["source"]["ref"] == "Codertocat/Hello-World#2"
    closed = closed_pull(github_examples, merged=False)
    sent = signing.github(made["secret"], "pull_request", closed, "gh-closed")
    evaluated(world, made, deliver(world.client, made, sent))
    assert work_item(world, item["id"])["stage"] == "CANCELLED"
    (staged,) = runs_of(world, cancelled)
    assert staged.metadata["to_stage"] == "CANCELLED"


def test_a_gitlab_merge_request_merged_completes_the_issue_it_closes(
    shaped_world: World,
) -> None:
    world = shaped_world
    done = on_stage(world, "DONE")
    set_repositories(world.client, world.factory_uid, "gitlabhq/gitlab-test")
    automation(world, world.factory_uid, "triage", trigger("gitlab", "bot_mentioned"))
    made = connect(world, "gitlab", bot="factory-bot")
    issue = fixture("gitlab", "issue_open")
    issue["object_attributes"]["description"] = "@factory-bot please have a look"
    first = deliver(world.client, made, signing.gitlab(made["secret"], issue))
    evaluated(world, made, first)
    (item,) = work_items(world)
    assert item["source"]["ref"] == "gitlabhq/gitlab-test#23"

    merge_request = fixture("gitlab", "merge_request_open")
    opened = copy.deepcopy(merge_request)
    opened["object_attributes"]["description"] = "Closes #23"
    merged = copy.deepcopy(opened)
    merged["object_attributes"] |= {"action": "merge", "state": "merged"}
    sent = signing.gitlab(made["secret"], opened)  # opened: nothing ends yet
    evaluated(world, made, deliver(world.client, made, sent))
    assert work_item(world, item["id"])["stage"] == "TRIAGE"
    evaluated(world, made, deliver(world.client, made, signing.gitlab(made["secret"], merged)))
    assert work_item(world, item["id"])["stage"] == "DONE"
    (staged,) = runs_of(world, done)
    assert staged.metadata["work_item_id"] == item["id"]
