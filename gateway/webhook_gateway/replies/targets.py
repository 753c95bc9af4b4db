"""What a reply hangs on, per provider: the issue, pull request, merge request or thread a run
came from. Tagged Structs (`provider`), so an outbox row can hold one as JSON; the work item of
the event that started the run gives it (docs/providers.md#replies)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct


class GitHubThread(Struct, frozen=True, kw_only=True, tag="github", tag_field="provider"):
    """An issue or a pull request: GitHub comments on both through the issues API."""

    repository: str  # owner/name
    number: int


class GitLabThread(Struct, frozen=True, kw_only=True, tag="gitlab", tag_field="provider"):
    """An issue or a merge request of a project (its numeric id or its full path); `url`, the
    web page of the issue or merge request, makes the note's link."""

    project: str
    kind: Literal["issue", "merge_request"]
    iid: int
    url: str | None = None


class SlackThread(Struct, frozen=True, kw_only=True, tag="slack", tag_field="provider"):
    """The thread of a message: `thread_ts` is the ts of the message that started it."""

    channel: str
    thread_ts: str


class LinearIssue(Struct, frozen=True, kw_only=True, tag="linear", tag_field="provider"):
    issue_id: str  # the issue's UUID (its identifier, ENG-12, works as well)


class JiraIssue(Struct, frozen=True, kw_only=True, tag="jira", tag_field="provider"):
    issue_key: str  # PROJ-12 (or the numeric id)


ReplyTarget = GitHubThread | GitLabThread | SlackThread | LinearIssue | JiraIssue


def mismatch(target: ReplyTarget, provider: str) -> str:
    """Why a connection of `provider` cannot reply on `target` (a work item of another)."""
    return f"a {provider} connection cannot reply on a {type(target).__name__}"
