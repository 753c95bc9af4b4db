"""Which work items a delivery ends (gateway/webhook_gateway/providers/work_item_ends.py), on
GitHub's and GitLab's payload shapes: merged or not, the closing keywords of a description, closed
issues."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.webhook_gateway.providers.work_item_ends import CANCELLED, DONE, Ending, ending_of

REPO = {"full_name": "octo/app"}


def pull(action: str, merged: bool, body: str | None = None) -> dict[str, Any]:
    return {
        "action": action,
        "repository": REPO,
        "pull_request": {
            "number": 9,
            "merged": merged,
            "body": body,
            "html_url": "https://github.com/octo/app/pull/9",
        },
    }


def github(event: str, payload: Any) -> Ending | None:
    return ending_of("github", {"x-github-event": event}, payload)


@pytest.mark.parametrize(
    ("body", "closed"),
    [
        (None, ()),
        ("Closes #12", ("octo/app#12",)),
        ("fixes: #3 and resolves other/lib#4", ("octo/app#3", "other/lib#4")),
        ("Fixed https://github.com/octo/app/issues/77.", ("octo/app#77",)),
        ("Related to #6", ()),
        ("Closing #7, implements #8", ("octo/app#7", "octo/app#8")),  # GitLab's words too
        ("Refs #5", ()),
        ("Closes #9", ()),  # itself: listed once
        ("`closes` nothing: closes#4", ()),
    ],
)
def test_a_merged_pull_request_completes_itself_and_what_it_closes(
    body: str | None, closed: tuple[str, ...]
) -> None:
    ending = github("pull_request", pull("closed", True, body))
    assert ending == Ending(
        "github",
        DONE,
        ("octo/app#9", *closed),
        "https://github.com/octo/app/pull/9",
        "octo/app",
    )


def test_a_pull_request_closed_unmerged_cancels_only_itself() -> None:
    ending = github("pull_request", pull("closed", False, "Closes #12"))
    assert ending == Ending("github", CANCELLED, ("octo/app#9",))


def test_other_actions_and_events_end_nothing() -> None:
    assert github("pull_request", pull("opened", False, "Closes #12")) is None
    assert github("pull_request_review", pull("closed", True)) is None
    assert ending_of("slack", {}, {"action": "closed"}) is None
    assert github("pull_request", ["not", "an", "object"]) is None
    assert github("pull_request", {"action": "closed", "repository": REPO}) is None


@pytest.mark.parametrize(
    ("reason", "stage"), [("completed", DONE), (None, DONE), ("not_planned", CANCELLED)]
)
def test_a_closed_issue_ends_itself_by_its_reason(reason: str | None, stage: str) -> None:
    payload = {"action": "closed", "repository": REPO, "issue": {"number": 4}}
    payload["issue"]["state_reason"] = reason
    assert github("issues", payload) == Ending("github", stage, ("octo/app#4",))
    payload["issue"]["pull_request"] = {"url": "..."}  # a pull request's: its own event says
    assert github("issues", payload) is None


def gitlab(kind: str, action: str, description: str = "") -> Ending | None:
    payload = {
        "object_kind": kind,
        "project": {"path_with_namespace": "group/app"},
        "object_attributes": {
            "iid": 3,
            "action": action,
            "description": description,
            "url": "https://gitlab.example/group/app/-/merge_requests/3",
        },
    }
    return ending_of("gitlab", {}, payload)


def test_gitlab_merge_requests_and_issues() -> None:
    url = "https://gitlab.example/group/app/-/merge_requests/3"
    merged = gitlab(
        "merge_request", "merge", "Closes #23, closes https://gitlab.example/g/x/-/issues/8"
    )
    assert merged == Ending(
        "gitlab", DONE, ("group/app!3", "group/app#23", "g/x#8"), url, "group/app"
    )
    assert gitlab("merge_request", "close") == Ending("gitlab", CANCELLED, ("group/app!3",))
    assert gitlab("merge_request", "update", "Closes #23") is None
    assert gitlab("issue", "close") == Ending("gitlab", DONE, ("group/app#3",))
    assert gitlab("issue", "reopen") is None
