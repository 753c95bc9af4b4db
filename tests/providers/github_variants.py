"""Real GitHub examples changed in one field, for the cases the examples lack (a merged pull
request, comments and bodies that mention someone)."""

from __future__ import annotations

import copy
from typing import Any

from .conftest import GithubExamples


def first(examples: GithubExamples, kind: str, action: str | None) -> dict[str, Any]:
    """A deep copy of the first example of ``kind`` with ``action``."""
    for example in examples[kind]:
        if example.get("action") == action:
            return copy.deepcopy(example)
    raise AssertionError(f"@octokit/webhooks-examples has no {kind}.{action} example")


def merged_pull_request(examples: GithubExamples) -> dict[str, Any]:
    payload = first(examples, "pull_request", "closed")
    payload["pull_request"]["merged"] = True
    return payload


def comment_mentioning(examples: GithubExamples, body: str, *, on_pr: bool) -> dict[str, Any]:
    payload = first(examples, "issue_comment", "created")
    payload["comment"]["body"] = body
    if on_pr:
        payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/1"}
    else:
        payload["issue"].pop("pull_request", None)
    return payload


def variants(examples: GithubExamples) -> list[tuple[str, dict[str, Any]]]:
    """(X-GitHub-Event, payload) of every variant, for the catalogue test."""
    opened_issue = first(examples, "issues", "opened")
    opened_issue["issue"]["body"] = "@warp-agent please look"
    opened_pr = first(examples, "pull_request", "opened")
    opened_pr["pull_request"]["body"] = "cc @Octocat"
    review = first(examples, "pull_request_review", "submitted")
    review["review"]["body"] = "@warp-agent fix the nits"
    review_comment = first(examples, "pull_request_review_comment", "created")
    review_comment["comment"]["body"] = "@warp-agent rename this"
    return [
        ("pull_request", merged_pull_request(examples)),
        ("issue_comment", comment_mentioning(examples, "@warp-agent fix it", on_pr=False)),
        ("issue_comment", comment_mentioning(examples, "@warp-agent fix it", on_pr=True)),
        ("issues", opened_issue),
        ("pull_request", opened_pr),
        ("pull_request_review", review),
        ("pull_request_review_comment", review_comment),
    ]
