"""Where a run's reply goes, read from the providers' own example payloads (tests/fixtures,
@octokit/webhooks-examples): the issue, pull or merge request, or thread, and who caused it."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.replies import GitHubThread, GitLabThread, JiraIssue, LinearIssue, SlackThread
from gateway.replies.origin import reply_origin
from tests.providers.conftest import GithubExamples, fixture, github_examples

__all__ = ["github_examples"]  # the fixture, for this module


def example(examples: GithubExamples, event: str, action: str) -> Any:
    return next(p for p in examples[event] if p.get("action") == action)


def test_github_issues_comments_and_pull_requests(github_examples: GithubExamples) -> None:
    labeled = reply_origin("github", example(github_examples, "issues", "labeled"))
    assert labeled is not None
    assert labeled.target == GitHubThread(repository="Codertocat/Hello-World", number=1)
    assert labeled.actor == "Codertocat"
    comment = reply_origin("github", example(github_examples, "issue_comment", "created"))
    assert comment is not None and isinstance(comment.target, GitHubThread)
    pull = example(github_examples, "pull_request", "opened")
    found = reply_origin("github", pull)
    assert found is not None and found.target == GitHubThread(
        repository=pull["repository"]["full_name"], number=pull["pull_request"]["number"]
    )
    assert reply_origin("github", github_examples["push"][0]) is None  # nothing to reply on


@pytest.mark.parametrize(
    ("name", "kind", "iid"),
    [
        ("issue_open", "issue", 23),
        ("merge_request_open", "merge_request", 1),
        ("note_issue", "issue", 17),
        ("note_merge_request", "merge_request", 1),
    ],
)
def test_gitlab_issues_merge_requests_and_their_notes(name: str, kind: str, iid: int) -> None:
    payload = fixture("gitlab", name)
    found = reply_origin("gitlab", payload)
    assert found is not None and isinstance(found.target, GitLabThread)
    assert (found.target.kind, found.target.iid) == (kind, iid)
    assert found.target.project == str(payload["project"]["id"])


def test_slack_threads_linear_and_jira_issues() -> None:
    mention = fixture("slack", "app_mention")
    found = reply_origin("slack", mention)
    assert found is not None
    assert found.target == SlackThread(channel="C123ABC456", thread_ts=mention["event"]["ts"])
    assert found.actor == mention["event"]["user"]
    created = fixture("linear", "issue_create")
    issue = reply_origin("linear", created)
    assert issue is not None and issue.target == LinearIssue(issue_id=created["data"]["id"])
    comment = fixture("linear", "comment_create")
    on = reply_origin("linear", comment)
    assert on is not None and on.target == LinearIssue(issue_id=comment["data"]["issueId"])
    jira = reply_origin("jira", fixture("jira", "comment_created_mention"))
    assert jira is not None and jira.target == JiraIssue(issue_key="KAN-22")
    assert reply_origin("slack", {"type": "url_verification"}) is None
    assert reply_origin("webhook", {}) is None
