"""GitHub: every example of @octokit/webhooks-examples normalizes to the events docs/providers.md
says, with the values filters match on."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.webhook_gateway.providers import TriggerEvent, delivery_id, github, normalize

from .conftest import GithubExamples
from .github_variants import comment_mentioning, first, merged_pull_request

# the GitHub (event, action) pairs the events of factory-format.md §4 come from
SOURCES = [
    ("push", None),
    ("issues", "opened"),
    ("issues", "labeled"),
    ("issues", "assigned"),
    ("pull_request", "opened"),
    ("pull_request", "ready_for_review"),
    ("pull_request", "closed"),
    ("pull_request", "labeled"),
    ("pull_request", "synchronize"),
    ("pull_request", "reopened"),
    ("pull_request", "assigned"),
    ("pull_request", "review_requested"),
    ("issue_comment", "created"),
    ("pull_request_review", "submitted"),
    ("pull_request_review_comment", "created"),
    ("check_suite", "completed"),
    ("check_suite", "rerequested"),
    ("check_run", "rerequested"),
    ("workflow_run", "completed"),
]
SIMPLE: dict[tuple[str, str], str] = {
    ("issues", "labeled"): "issue_labeled",
    ("issues", "assigned"): "issue_assigned",
    ("pull_request", "ready_for_review"): "pull_request_ready",
    ("pull_request", "labeled"): "pull_request_labeled",
    ("pull_request", "synchronize"): "pull_request_synchronized",
    ("pull_request", "reopened"): "pull_request_reopened",
    ("pull_request", "assigned"): "pull_request_assigned",
    ("pull_request", "review_requested"): "pull_request_review_requested",
    ("pull_request_review", "submitted"): "pull_request_review_submitted",
    ("check_suite", "completed"): "check_suite_completed",
    ("check_suite", "rerequested"): "check_suite_rerequested",
    ("check_run", "rerequested"): "check_run_rerequested",
    ("workflow_run", "completed"): "workflow_run_completed",
}


def events_of(kind: str, payload: Any) -> list[TriggerEvent]:
    return normalize("github", {"x-github-event": kind}, payload)


def expected(kind: str, payload: dict[str, Any]) -> list[str]:
    """docs/providers.md's table, restated for the examples (none of which mentions anyone)."""
    action = payload.get("action")
    if kind == "push":
        return [] if payload["deleted"] else ["push"]
    if (kind, action) == ("issues", "opened"):
        return ["issue_created"]
    if (kind, action) == ("pull_request", "opened"):
        return ["pull_request_opened"]
    if (kind, action) == ("pull_request", "closed"):
        return [
            "pull_request_merged" if payload["pull_request"]["merged"] else "pull_request_closed"
        ]
    name = SIMPLE.get((kind, action))
    return [name] if name else []


def test_the_package_has_examples_of_every_source(github_examples: GithubExamples) -> None:
    for kind, action in SOURCES:
        found = [e for e in github_examples.get(kind, []) if e.get("action") == action]
        assert found, f"no {kind}.{action} example"


def test_every_example_of_every_event(github_examples: GithubExamples) -> None:
    checked = 0
    for kind, examples in github_examples.items():
        for payload in examples:
            got = events_of(kind, payload)
            assert [e.event for e in got] == expected(kind, payload), (kind, payload.get("action"))
            for event in got:
                assert event.provider == "github"
                assert event.repository == payload["repository"]["full_name"]
                assert event.values["repos"] == [payload["repository"]["full_name"].casefold()]
            checked += len(got)
    assert checked > 40


def test_issue_labeled_carries_the_added_label(github_examples: GithubExamples) -> None:
    payload = first(github_examples, "issues", "labeled")
    payload["issue"]["labels"].append({"name": "already-there"})
    (event,) = events_of("issues", payload)
    assert event.values == {
        "labels": ["bug"],
        "assignees": ["codertocat"],
        "authors": ["codertocat"],
        "repos": ["codertocat/hello-world"],
    }


def test_issue_created_carries_all_its_labels(github_examples: GithubExamples) -> None:
    (event,) = events_of("issues", first(github_examples, "issues", "opened"))
    assert event.event == "issue_created"
    assert event.values["labels"] == ["bug"]
    assert event.values["authors"] == ["codertocat"]


def test_issue_assigned_carries_the_new_assignee(github_examples: GithubExamples) -> None:
    (event,) = events_of("issues", first(github_examples, "issues", "assigned"))
    assert event.values == {
        "assignees": ["codertocat"],
        "labels": ["bug"],
        "repos": ["codertocat/hello-world"],
    }


def test_push_carries_branch_and_every_changed_path(github_examples: GithubExamples) -> None:
    payload = next(p for p in github_examples["push"] if p["ref"] == "refs/heads/master")
    payload = {
        **payload,
        "commits": [
            {"added": ["a.py"], "modified": ["README.md"], "removed": []},
            {"added": [], "modified": ["a.py"], "removed": ["old/b.py"]},
        ],
    }
    (event,) = events_of("push", payload)
    assert event.values == {
        "branches": ["master"],
        "paths": ["a.py", "README.md", "old/b.py"],
        "repos": ["codertocat/hello-world"],
    }


def test_tag_push_has_no_branch(github_examples: GithubExamples) -> None:
    payload = next(p for p in github_examples["push"] if p["ref"].startswith("refs/tags/"))
    payload = {**payload, "deleted": False}
    (event,) = events_of("push", payload)
    assert event.values["branches"] == []


def test_pull_request_values(github_examples: GithubExamples) -> None:
    (event,) = events_of("pull_request", first(github_examples, "pull_request", "reopened"))
    assert event.values == {
        "base_branches": ["master"],
        "pr_numbers": [2],
        "assignees": ["codertocat"],
        "authors": ["codertocat"],
        "labels": ["bug"],
        "repos": ["codertocat/hello-world"],
    }
    assert "paths" in github.NOT_IN_PAYLOAD[event.event]


def test_merged_is_not_also_closed(github_examples: GithubExamples) -> None:
    events = events_of("pull_request", merged_pull_request(github_examples))
    assert [e.event for e in events] == ["pull_request_merged"]


def test_review_requested_names_the_reviewer(github_examples: GithubExamples) -> None:
    payload = first(github_examples, "pull_request", "review_requested")
    (event,) = events_of("pull_request", payload)
    assert event.values["reviewers"] == ["octocat"]
    assert event.values["reviewer_teams"] == []
    payload.pop("requested_reviewer")
    payload["requested_team"] = {"slug": "Platform-Team", "name": "Platform Team"}
    (event,) = events_of("pull_request", payload)
    assert event.values["reviewers"] == []
    assert event.values["reviewer_teams"] == ["platform-team"]


def test_review_submitted(github_examples: GithubExamples) -> None:
    payload = first(github_examples, "pull_request_review", "submitted")
    payload["review"]["state"] = "APPROVED"
    (event,) = events_of("pull_request_review", payload)
    assert event.values["review_states"] == ["approved"]
    assert event.values["mentioned"] == []


def test_workflow_run_completed(github_examples: GithubExamples) -> None:
    payload = next(
        p
        for p in github_examples["workflow_run"]
        if p["action"] == "completed" and "path" in p["workflow_run"]
    )
    (event,) = events_of("workflow_run", payload)
    assert event.values == {
        "conclusions": ["success"],
        "branches": ["master"],
        "workflows": ["test", ".github/workflows/test.yml", "test.yml"],
        "authors": ["codertocat"],
        "repos": ["octo-org/octo-repo"],
    }
    assert "labels" not in event.values  # a run's pull request labels are not in the payload


def test_check_suite_completed(github_examples: GithubExamples) -> None:
    (event,) = events_of("check_suite", first(github_examples, "check_suite", "completed"))
    assert event.values["conclusions"] == ["success"]
    assert event.values["branches"] == ["changes"]


@pytest.mark.parametrize(
    ("on_pr", "name"), [(False, "issue_mentioned"), (True, "pull_request_mentioned")]
)
def test_comment_mentions(github_examples: GithubExamples, on_pr: bool, name: str) -> None:
    body = "@Warp-Agent can you fix this? cc @octo-org/Reviewers, mail me@example.com, `@not-me`"
    (event,) = events_of("issue_comment", comment_mentioning(github_examples, body, on_pr=on_pr))
    assert event.event == name
    labels = [label["name"] for label in github_examples["issue_comment"][0]["issue"]["labels"]]
    assert event.values == {
        "mentioned": ["warp-agent", "octo-org/reviewers"],
        "labels": labels,
        "repos": ["codertocat/hello-world"],
    }


def test_comment_without_a_mention_starts_nothing(github_examples: GithubExamples) -> None:
    payload = comment_mentioning(github_examples, "no one here; see ```\n@bot\n```", on_pr=False)
    assert events_of("issue_comment", payload) == []
    payload["action"] = "edited"
    payload["comment"]["body"] = "@warp-agent"
    assert events_of("issue_comment", payload) == []


def test_opened_body_mentions(github_examples: GithubExamples) -> None:
    payload = first(github_examples, "pull_request", "opened")
    payload["pull_request"]["body"] = "Fixes #1. @warp-agent review please"
    names = [e.event for e in events_of("pull_request", payload)]
    assert names == ["pull_request_opened", "pull_request_mentioned"]


def test_odd_payloads_give_no_events() -> None:
    assert events_of("issues", None) == []
    assert events_of("issues", {"action": "opened", "issue": "not an object"})[0].values == {
        "labels": [],
        "assignees": [],
        "authors": [],
        "repos": [],
    }
    assert normalize("github", {}, {"action": "opened"}) == []


def test_delivery_id() -> None:
    headers = {"x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}
    assert delivery_id("github", headers, {}) == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert delivery_id("github", {}, {}) is None
