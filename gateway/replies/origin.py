"""Where a run's reply goes, from the provider event that started it: the issue, pull request,
merge request or thread its payload is about, and who caused it. A run started by an event that
is about none of them (a push, a check suite) has no reply.

One function on purpose: work items (what the work is about, across events) will give the
target instead, and replace it."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

from gateway.replies.targets import (
    GitHubThread,
    GitLabThread,
    JiraIssue,
    LinearIssue,
    ReplyTarget,
    SlackThread,
)

# GitHub payload keys that name the issue or pull request an event is about
_GITHUB_ITEMS = ("issue", "pull_request")


class Origin(Struct, frozen=True, kw_only=True):
    target: ReplyTarget
    actor: str | None = None


def reply_origin(provider: str, payload: Any) -> Origin | None:
    """The reply target of a provider event's payload, None when it has none."""
    if not isinstance(payload, dict):
        return None
    read = _READERS.get(provider)
    return None if read is None else read(payload)


def _github(payload: dict[str, Any]) -> Origin | None:
    repository = _text(_dig(payload, "repository", "full_name"))
    for key in _GITHUB_ITEMS:
        number = _dig(payload, key, "number")
        if repository and isinstance(number, int) and not isinstance(number, bool):
            target = GitHubThread(repository=repository, number=number)
            return Origin(target=target, actor=_text(_dig(payload, "sender", "login")))
    return None


def _gitlab(payload: dict[str, Any]) -> Origin | None:
    project = _dig(payload, "project", "id")
    project_ref = str(project) if isinstance(project, int) else None
    project_ref = project_ref or _text(_dig(payload, "project", "path_with_namespace"))
    attributes = payload.get("object_attributes")
    if not project_ref or not isinstance(attributes, dict):
        return None
    kind = payload.get("object_kind")
    name: Literal["issue", "merge_request"] = "issue"
    item: Any = None
    if kind in ("issue", "work_item"):
        item = attributes
    elif kind == "merge_request":
        item, name = attributes, "merge_request"
    elif kind == "note":
        noteable = attributes.get("noteable_type")
        if noteable == "MergeRequest":
            name = "merge_request"
        item = payload.get(name) if noteable in ("Issue", "MergeRequest") else None
    if not isinstance(item, dict) or not isinstance(item.get("iid"), int):
        return None
    url = _text(item.get("url"))
    target = GitLabThread(project=project_ref, kind=name, iid=item["iid"], url=url)
    return Origin(target=target, actor=_text(_dig(payload, "user", "username")))


def _slack(payload: dict[str, Any]) -> Origin | None:
    event = payload.get("event")
    if not isinstance(event, dict):
        return None
    channel = _text(event.get("channel"))
    thread = _text(event.get("thread_ts")) or _text(event.get("ts"))
    if not channel or not thread:
        return None
    return Origin(
        target=SlackThread(channel=channel, thread_ts=thread), actor=_text(event.get("user"))
    )


def _linear(payload: dict[str, Any]) -> Origin | None:
    data = payload.get("data")
    if not isinstance(data, dict):
        return None
    kind = payload.get("type")
    issue = data.get("id") if kind == "Issue" else data.get("issueId")
    issue = issue or _dig(data, "issue", "id")
    issue = issue or _dig(payload, "agentSession", "issue", "id")
    if not _text(issue):
        return None
    actor = _text(_dig(payload, "actor", "name"))
    return Origin(target=LinearIssue(issue_id=str(issue)), actor=actor)


def _jira(payload: dict[str, Any]) -> Origin | None:
    key = _text(_dig(payload, "issue", "key"))
    if not key:
        return None
    actor = _text(_dig(payload, "user", "displayName"))
    return Origin(target=JiraIssue(issue_key=key), actor=actor)


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_READERS = {
    "github": _github,
    "gitlab": _gitlab,
    "slack": _slack,
    "linear": _linear,
    "jira": _jira,
}
