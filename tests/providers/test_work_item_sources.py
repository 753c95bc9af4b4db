"""What each provider's documented payloads are about (their work item's source), and which
texts name a factory: the providers' own samples (tests/fixtures/providers) and GitHub's
@octokit/webhooks-examples."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.webhook_gateway.providers.work_items import Source, mentions_alias, source_of
from gateway.webhook_gateway.replies.targets import (
    GitHubThread,
    GitLabThread,
    JiraIssue,
    LinearIssue,
)
from gateway.webhook_gateway.replies.work_items import target_of
from tests.providers.conftest import GithubExamples, fixture


def _github(examples: GithubExamples, event: str, action: str) -> Any:
    return next(p for p in examples[event] if p.get("action") == action)


def test_github_issues_pull_requests_and_their_comments(github_examples: GithubExamples) -> None:
    opened = source_of(
        "github", {"x-github-event": "issues"}, _github(github_examples, "issues", "opened")
    )
    assert opened is not None
    assert (opened.kind, opened.ref) == ("issue", "Codertocat/Hello-World#1")
    assert opened.url == "https://github.com/Codertocat/Hello-World/issues/1"
    comment = _github(github_examples, "issue_comment", "created")
    said = source_of("github", {"x-github-event": "issue_comment"}, comment)
    assert said is not None and said.ref == opened.ref
    assert said.text == comment["comment"]["body"]
    edited = dict(comment, action="edited")
    edited_source = source_of("github", {"x-github-event": "issue_comment"}, edited)
    assert edited_source is not None and edited_source.text is None  # an edit names no one
    pr = _github(github_examples, "pull_request", "opened")
    found = source_of("github", {"x-github-event": "pull_request"}, pr)
    assert found is not None and found.kind == "pull_request"
    assert found.ref == f"{pr['repository']['full_name']}#{pr['number']}"
    push = github_examples["push"][0]
    assert source_of("github", {"x-github-event": "push"}, push) is None


@pytest.mark.parametrize(
    ("name", "kind", "ref", "url"),
    [
        ("issue_open", "issue", "gitlabhq/gitlab-test#23", "http://example.com/diaspora/issues/23"),
        (
            "note_issue",
            "issue",
            "gitlab-org/gitlab-test#17",
            "http://example.com/gitlab-org/gitlab-test/issues/17",
        ),
        (
            "note_merge_request",
            "merge_request",
            "gitlab-org/gitlab-test!1",
            "http://example.com/gitlab-org/gitlab-test/merge_requests/1",
        ),
        ("merge_request_open", "merge_request", "gitlabhq/gitlab-test!1", None),
    ],
)
def test_gitlab_issues_and_merge_requests(name: str, kind: str, ref: str, url: str | None) -> None:
    found = source_of("gitlab", {}, fixture("gitlab", name))
    assert found is not None and (found.kind, found.ref) == (kind, ref)
    if url is not None:
        assert found.url == url
    target = target_of(found)
    assert isinstance(target, GitLabThread) and target.kind == kind
    assert (target.project, target.url) == (found.project, found.url)


def test_linear_and_jira_issues() -> None:
    created = source_of("linear", {}, fixture("linear", "issue_create"))
    comment = source_of("linear", {}, fixture("linear", "comment_create"))
    assert created is not None and comment is not None
    assert comment.ref == "6a17c5cc-5188-4487-ab56-44626a9b2daf"
    assert comment.text == "This is a comment created"
    assert comment.url == "https://linear.app/linear-hill-charts/issue/LIN-28"
    assert target_of(comment) == LinearIssue(issue_id=comment.ref)
    jira = source_of("jira", {}, fixture("jira", "comment_created_mention"))
    assert jira is not None and jira.ref == "KAN-22"
    assert jira.url == "https://helloworld-test.atlassian.net/browse/KAN-22"
    assert target_of(jira) == JiraIssue(issue_key="KAN-22")


def test_slack_threads() -> None:
    asked = source_of("slack", {}, fixture("slack", "app_mention"))
    assert asked == Source(
        "slack",
        "thread",
        "C123ABC456/1515449522.000016",
        None,
        "<@U0LAN0Z89> is it everything a river should be?",
        "C123ABC456",
        "1515449522.000016",
        False,
        "C123ABC456/1515449522.000016",
        "U061F7AUR",  # who wrote it
    )
    reply = fixture("slack", "message_channels")
    reply["event"]["thread_ts"] = "1355517000.000001"
    found = source_of("slack", {}, reply)
    assert found is not None and found.thread_reply
    assert found.ref == "C123ABC456/1355517000.000001"
    assert source_of("slack", {}, fixture("slack", "reaction_added")) is None


def test_who_caused_it(github_examples: GithubExamples) -> None:
    """The actor replies name, read with the source (no other reader of reply payloads)."""
    labeled = _github(github_examples, "issues", "labeled")
    found = source_of("github", {"x-github-event": "issues"}, labeled)
    assert found is not None and found.actor == "Codertocat"
    assert target_of(found) == GitHubThread(repository="Codertocat/Hello-World", number=1)
    note = source_of("gitlab", {}, fixture("gitlab", "note_issue"))
    assert note is not None and note.actor == fixture("gitlab", "note_issue")["user"]["username"]
    linear = fixture("linear", "comment_create") | {"actor": {"name": "Ann"}}
    found = source_of("linear", {}, linear)
    assert found is not None and found.actor == "Ann"
    jira = fixture("jira", "comment_created_mention")
    found = source_of("jira", {}, jira)
    assert found is not None and found.actor == jira["comment"]["author"]["displayName"]


def test_other_events_about_an_issue_or_pull_request(github_examples: GithubExamples) -> None:
    """Any GitHub event whose payload names an issue or pull request is about it (a review
    thread resolved); GitLab's work items are issues; a Linear entity of an issue is about it."""
    thread = next(iter(github_examples.get("pull_request_review_thread", [])), None)
    if thread is not None:
        found = source_of("github", {"x-github-event": "pull_request_review_thread"}, thread)
        assert found is not None and found.kind == "pull_request"
    work_item = fixture("gitlab", "issue_open") | {"object_kind": "work_item"}
    found = source_of("gitlab", {}, work_item)
    assert found is not None and found.kind == "issue" and found.ref.endswith("#23")
    attachment = {"type": "Attachment", "data": {"issueId": "i-1"}, "actor": {"name": "Ann"}}
    assert target_of(source_of("linear", {}, attachment)) == LinearIssue(issue_id="i-1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("@fa please", True),
        ("hey @FA.", True),
        ("(@fa)", True),
        ("@fable", False),
        ("me@fa", False),
        ("`@fa`", False),
        ("```\n@fa\n```", False),
        ("@fa-bot", False),
        (None, False),
    ],
)
def test_a_mention_of_the_alias(text: str | None, named: bool) -> None:
    assert mentions_alias(text, "fa") is named
    assert mentions_alias("ping @Night Shift now", "night shift")
