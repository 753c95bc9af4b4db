"""GitHub: a delivery (``X-GitHub-Event`` + payload) -> trigger events (docs/providers.md).

Values are in the comparison forms of ``values.py``: logins, teams, repositories,
conclusions and review states case-folded; branches without ``refs/heads/``; labels and
workflow names as given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from gateway.kernel.types import JsonObject

from .event import EventValues, Headers, TriggerEvent
from .mentions import github_mentions
from .payload import dedupe, obj, objs, text, texts
from .values import branch

__all__ = ["NOT_IN_PAYLOAD", "delivery_id", "normalize"]

PROVIDER: Final = "github"

# Catalogue keys a GitHub payload cannot tell: absent from those events' values, so a filter
# naming them does not match (docs/providers.md, "What the payload cannot tell").
_PR_EVENTS: Final = (
    "pull_request_opened",
    "pull_request_ready",
    "pull_request_closed",
    "pull_request_merged",
    "pull_request_labeled",
    "pull_request_synchronized",
    "pull_request_reopened",
)
NOT_IN_PAYLOAD: Final[dict[str, frozenset[str]]] = {
    **{event: frozenset({"paths"}) for event in _PR_EVENTS},
    "check_suite_completed": frozenset({"labels"}),
    "workflow_run_completed": frozenset({"labels"}),
}


def delivery_id(headers: Headers, _payload: Any = None) -> str | None:
    """``X-GitHub-Delivery``: GitHub keeps it when a delivery is redelivered."""
    return headers.get("x-github-delivery") or None


def normalize(headers: Headers, payload: Any, bot: str | None = None) -> list[TriggerEvent]:
    """The trigger events of one GitHub delivery; ``bot`` is unused (GitHub says who sent it)."""
    handler = _HANDLERS.get(headers.get("x-github-event") or "")
    if handler is None or not isinstance(payload, dict):
        return []
    return handler(payload, _Repo(payload))


class _Repo:
    """The delivery's repository, read once: its display name and comparison form."""

    __slots__ = ("key", "name")

    def __init__(self, payload: JsonObject) -> None:
        self.name = text(obj(payload, "repository"), "full_name")
        self.key = [self.name.casefold()] if self.name else []

    def event(self, name: str, values: EventValues) -> TriggerEvent:
        values["repos"] = self.key
        return TriggerEvent(PROVIDER, name, values, self.name)


def _login(user: Any) -> list[str]:
    login = text(user, "login")
    return [login.casefold()] if login else []


def _logins(users: list[JsonObject]) -> list[str]:
    return dedupe(login.casefold() for login in texts(users, "login"))


def _labels(item: JsonObject) -> list[str]:
    return texts(objs(item, "labels"), "name")


def _mentioned(logins: list[str]) -> list[str]:
    return dedupe(login.casefold() for login in logins)


def _push(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("deleted") is True:  # a deleted branch or tag pushes no code
        return []
    ref = text(payload, "ref") or ""
    branches = [branch(ref)] if ref.startswith("refs/heads/") else []
    paths: dict[str, None] = {}
    for commit in objs(payload, "commits"):
        for change in ("added", "modified", "removed"):
            files = commit.get(change)
            if isinstance(files, list):
                paths.update(dict.fromkeys(f for f in files if isinstance(f, str)))
    return [repo.event("push", {"branches": branches, "paths": list(paths)})]


def _issues(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    action = payload.get("action")
    issue = obj(payload, "issue")
    if action == "labeled":  # the label added, not the issue's others
        added = texts([obj(payload, "label")], "name")
        return [repo.event("issue_labeled", _issue_values(issue, added))]
    labels = _labels(issue)
    if action == "opened":
        events = [repo.event("issue_created", _issue_values(issue, labels))]
        mentioned = github_mentions(text(issue, "body"))
        if mentioned:
            events.append(_mention("issue_mentioned", repo, mentioned, labels))
        return events
    if action == "assigned":
        values: EventValues = {"assignees": _login(obj(payload, "assignee")), "labels": labels}
        return [repo.event("issue_assigned", values)]
    return []


def _issue_values(issue: JsonObject, labels: list[str]) -> EventValues:
    return {
        "labels": labels,
        "assignees": _logins(objs(issue, "assignees")),
        "authors": _login(obj(issue, "user")),
    }


def _mention(event: str, repo: _Repo, logins: list[str], labels: list[str]) -> TriggerEvent:
    return repo.event(event, {"mentioned": _mentioned(logins), "labels": labels})


_PR_ACTIONS: Final = {
    "opened": "pull_request_opened",
    "ready_for_review": "pull_request_ready",
    "synchronize": "pull_request_synchronized",
    "reopened": "pull_request_reopened",
}


def _pull_request(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    action = payload.get("action")
    pr = obj(payload, "pull_request")
    if action == "labeled":  # the label added, not the pull request's others
        added = texts([obj(payload, "label")], "name")
        return [repo.event("pull_request_labeled", _pr_values(payload, pr, added))]
    labels = _labels(pr)
    if action == "closed":  # merged and closed-unmerged are two events, never both
        name = "pull_request_merged" if pr.get("merged") is True else "pull_request_closed"
        return [repo.event(name, _pr_values(payload, pr, labels))]
    if action == "assigned":
        values: EventValues = {"assignees": _login(obj(payload, "assignee")), "labels": labels}
        return [repo.event("pull_request_assigned", values)]
    if action == "review_requested":
        reviewers: EventValues = {
            "reviewers": _login(obj(payload, "requested_reviewer")),
            "reviewer_teams": _team(obj(payload, "requested_team")),
        }
        return [repo.event("pull_request_review_requested", reviewers)]
    event = _PR_ACTIONS.get(action) if isinstance(action, str) else None
    if event is None:
        return []
    events = [repo.event(event, _pr_values(payload, pr, labels))]
    if action == "opened" and (mentioned := github_mentions(text(pr, "body"))):
        events.append(_mention("pull_request_mentioned", repo, mentioned, labels))
    return events


def _team(team: JsonObject) -> list[str]:
    slug = text(team, "slug")
    return [slug.casefold()] if slug else []


def _pr_values(payload: JsonObject, pr: JsonObject, labels: list[str]) -> EventValues:
    base = text(obj(pr, "base"), "ref")
    number = payload.get("number", pr.get("number"))
    return {
        "base_branches": [branch(base)] if base else [],
        "pr_numbers": [number] if type(number) is int else [],
        "assignees": _logins(objs(pr, "assignees")),
        "authors": _login(obj(pr, "user")),
        "labels": labels,
    }


def _issue_comment(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("action") != "created":
        return []
    mentioned = github_mentions(text(obj(payload, "comment"), "body"))
    if not mentioned:
        return []
    issue = obj(payload, "issue")
    on_pr = isinstance(issue.get("pull_request"), dict)  # GitHub's PRs are issues too
    name = "pull_request_mentioned" if on_pr else "issue_mentioned"
    return [_mention(name, repo, mentioned, _labels(issue))]


def _review_comment(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("action") != "created":
        return []
    mentioned = github_mentions(text(obj(payload, "comment"), "body"))
    if not mentioned:
        return []
    labels = _labels(obj(payload, "pull_request"))
    return [_mention("pull_request_mentioned", repo, mentioned, labels)]


def _review(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("action") != "submitted":
        return []
    review = obj(payload, "review")
    mentioned = github_mentions(text(review, "body"))
    labels = _labels(obj(payload, "pull_request"))
    state = text(review, "state")
    values: EventValues = {
        "mentioned": _mentioned(mentioned),
        "labels": labels,
        "review_states": [state.casefold()] if state else [],
    }
    events = [repo.event("pull_request_review_submitted", values)]
    if mentioned:
        events.append(_mention("pull_request_mentioned", repo, mentioned, labels))
    return events


def _check_suite(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    action = payload.get("action")
    if action == "rerequested":
        return [repo.event("check_suite_rerequested", {})]
    if action != "completed":
        return []
    suite = obj(payload, "check_suite")
    values: EventValues = {
        "conclusions": _lower(text(suite, "conclusion")),
        "branches": _branch(text(suite, "head_branch")),
        # who pushed the commit the suite ran on: GitHub names the delivery's sender
        "authors": _login(obj(payload, "sender")),
    }
    return [repo.event("check_suite_completed", values)]


def _check_run(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("action") != "rerequested":
        return []
    return [repo.event("check_run_rerequested", {})]


def _workflow_run(payload: JsonObject, repo: _Repo) -> list[TriggerEvent]:
    if payload.get("action") != "completed":
        return []
    run = obj(payload, "workflow_run")
    path = text(run, "path")
    workflows = [text(run, "name") or text(obj(payload, "workflow"), "name")]
    if path:  # match ".github/workflows/ci.yml" and "ci.yml" as well as the name
        workflows += [path, path.rsplit("/", 1)[-1]]
    actor = obj(run, "actor") or obj(payload, "sender")
    values: EventValues = {
        "conclusions": _lower(text(run, "conclusion")),
        "branches": _branch(text(run, "head_branch")),
        "workflows": dedupe(w for w in workflows if w),
        "authors": _login(actor),
    }
    return [repo.event("workflow_run_completed", values)]


def _lower(value: str | None) -> list[str]:
    return [value.casefold()] if value else []


def _branch(value: str | None) -> list[str]:
    return [branch(value)] if value else []


_HANDLERS: Final[dict[str, Callable[[JsonObject, _Repo], list[TriggerEvent]]]] = {
    "push": _push,
    "issues": _issues,
    "pull_request": _pull_request,
    "issue_comment": _issue_comment,
    "pull_request_review_comment": _review_comment,
    "pull_request_review": _review,
    "check_suite": _check_suite,
    "check_run": _check_run,
    "workflow_run": _workflow_run,
}
