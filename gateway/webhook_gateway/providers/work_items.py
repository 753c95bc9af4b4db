"""What a provider delivery is about: its work item's source (docs/providers.md#work-items).

A work item is the thing the work is about, the same whichever event names it: a GitHub issue
or pull request (`owner/name#12`), a GitLab issue or merge request (`group/project#3`,
`group/project!3`), a Slack thread (`C123/1515449522.000016`: the channel and the ts of the
message that started the thread), a Linear issue (its id) or a Jira issue (`PROJ-12`). Beside
the key, a source carries what continuing the work needs: the text a person wrote (where a
mention of the factory is looked for, and what a follow-up passes on) and, for Slack, whether
the message is a reply in an existing thread.

Pure: a parsed payload and headers in, a `Source` (or None: the event is about no such thing)
out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from gateway.kernel.types import JsonObject

from .event import Headers
from .mentions import without_code
from .payload import obj, text

__all__ = ["Source", "mentions_alias", "source_of"]


class Source(NamedTuple):
    """What a provider event is about (a NamedTuple: made per delivery)."""

    provider: str
    kind: str  # issue | pull_request | merge_request | thread
    ref: str  # the work item's key within its provider
    url: str | None
    text: str | None = None  # what a person wrote (comment, message, description)
    # the provider-side address replies need (gateway.webhook_gateway.replies.work_items builds the
    # target)
    project: str | None = None  # GitHub repository, GitLab project path, Slack channel
    number: str | None = None  # issue / PR / MR number, Slack thread ts, Linear/Jira issue
    thread_reply: bool = False  # a Slack message in the thread of another
    # the message itself, where one message comes as several deliveries (Slack: `channel/ts`)
    message_ref: str | None = None
    actor: str | None = None  # who caused the event (a login, a Slack user id, a name)


def source_of(provider: str, headers: Headers, payload: Any) -> Source | None:
    reader = _READERS.get(provider)
    if reader is None or not isinstance(payload, dict):
        return None
    return reader(headers, payload)


def mentions_alias(body: str | None, alias: str) -> bool:
    """Whether `body` names `@alias` (case-insensitively, not inside a longer word)."""
    if not body or "@" not in body or not alias:
        return False
    pattern = r"(?<![\w@/.`-])@" + re.escape(alias) + r"(?![\w-])"
    return re.search(pattern, without_code(body), re.IGNORECASE) is not None


def _github(headers: Headers, payload: JsonObject) -> Source | None:
    repository = text(obj(payload, "repository"), "full_name")
    if not repository:
        return None
    event = headers.get("x-github-event") or ""
    body: str | None = None
    if event == "issues" or event == "issue_comment":
        item = obj(payload, "issue")
        kind = "pull_request" if isinstance(item.get("pull_request"), dict) else "issue"
        body = text(obj(payload, "comment"), "body") if event == "issue_comment" else None
    elif event in ("pull_request", "pull_request_review", "pull_request_review_comment"):
        item, kind = obj(payload, "pull_request"), "pull_request"
        if event == "pull_request_review":
            body = text(obj(payload, "review"), "body")
        elif event == "pull_request_review_comment":
            body = text(obj(payload, "comment"), "body")
    else:  # another event about an issue or pull request (a review thread, a sub-issue)
        item, kind = _github_item(payload)
    number = item.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        return None
    actor = text(obj(payload, "sender"), "login")
    if body is None and payload.get("action") == "opened":
        body = text(item, "body")
    if payload.get("action") not in _NEW_CONTENT or text(obj(payload, "sender"), "type") == "Bot":
        body = None  # a mention must be new content of a person: not an edit, not a bot's
    url = text(item, "html_url")
    return Source(
        "github", kind, f"{repository}#{number}", url, body, repository, str(number), actor=actor
    )


def _github_item(payload: JsonObject) -> tuple[JsonObject, str]:
    if "pull_request" in payload:
        return obj(payload, "pull_request"), "pull_request"
    item = obj(payload, "issue")
    return item, "pull_request" if isinstance(item.get("pull_request"), dict) else "issue"


_NEW_CONTENT: Final = frozenset({"opened", "created", "submitted"})


def _gitlab(_headers: Headers, payload: JsonObject) -> Source | None:
    project = text(obj(payload, "project"), "path_with_namespace")
    if not project:
        return None
    attrs = obj(payload, "object_attributes")
    kind_of = payload.get("object_kind")
    body: str | None
    if kind_of == "note":
        noteable = text(attrs, "noteable_type")
        if noteable == "Issue":
            item, kind = obj(payload, "issue"), "issue"
        elif noteable == "MergeRequest":
            item, kind = obj(payload, "merge_request"), "merge_request"
        else:
            return None
        body = text(attrs, "note")
        url = text(item, "url") or _before_fragment(text(attrs, "url"))
    elif kind_of in ("issue", "merge_request", "work_item"):
        item, kind = attrs, "merge_request" if kind_of == "merge_request" else "issue"
        body, url = text(attrs, "description"), text(attrs, "url")
    else:
        return None
    iid = item.get("iid")
    if not isinstance(iid, int) or isinstance(iid, bool):
        return None
    mark = "!" if kind == "merge_request" else "#"
    actor = text(obj(payload, "user"), "username")
    ref = f"{project}{mark}{iid}"
    return Source("gitlab", kind, ref, url, body, project, str(iid), actor=actor)


def _slack(_headers: Headers, payload: JsonObject) -> Source | None:
    if text(payload, "type") != "event_callback":
        return None
    event = obj(payload, "event")
    if text(event, "type") not in ("message", "app_mention"):
        return None
    channel, ts = text(event, "channel"), text(event, "ts")
    if not channel or not ts:
        return None
    thread = text(event, "thread_ts") or ts
    return Source(
        "slack",
        "thread",
        f"{channel}/{thread}",
        None,
        text(event, "text"),
        channel,
        thread,
        thread != ts,
        f"{channel}/{ts}",
        text(event, "user"),
    )


def _linear(_headers: Headers, payload: JsonObject) -> Source | None:
    kind = text(payload, "type")
    data = obj(payload, "data")
    body: str | None = None
    url = text(payload, "url")
    if kind == "Issue":
        issue_id, identifier = text(data, "id"), text(data, "identifier")
    elif kind == "Comment":
        issue = obj(data, "issue")
        issue_id = text(data, "issueId") or text(issue, "id")
        identifier, body = text(issue, "identifier"), text(data, "body")
        url = text(issue, "url") or _before_fragment(url)  # the comment's page: its issue's
    elif kind == "AgentSessionEvent":
        issue = obj(obj(payload, "agentSession"), "issue")
        issue_id, identifier, url = text(issue, "id"), text(issue, "identifier"), text(issue, "url")
        body = text(obj(obj(payload, "agentActivity"), "content"), "body")
    else:  # another entity of an issue (an attachment, a reaction): its issue
        issue = obj(data, "issue")
        issue_id = text(data, "issueId") or text(issue, "id")
        identifier, url = text(issue, "identifier"), text(issue, "url")
    if not issue_id:
        return None
    actor = text(obj(payload, "actor"), "name")
    return Source("linear", "issue", issue_id, url, body, identifier, issue_id, actor=actor)


def _jira(_headers: Headers, payload: JsonObject) -> Source | None:
    issue = obj(payload, "issue")
    key = text(issue, "key")
    if not key:
        return None
    body = text(obj(payload, "comment"), "body")
    if body is None and text(payload, "webhookEvent") == "jira:issue_created":
        body = text(obj(issue, "fields"), "description")
    url = _jira_browse(text(issue, "self"), key)
    # issue events name their `user`, comment events only the comment's author
    actor = text(obj(payload, "user"), "displayName")
    actor = actor or text(obj(obj(payload, "comment"), "author"), "displayName")
    return Source("jira", "issue", key, url, body, None, key, actor=actor)


def _jira_browse(api_url: str | None, key: str) -> str | None:
    """The issue's page, from its REST address (`https://site/rest/api/2/issue/10021`)."""
    if not api_url or "/rest/api/" not in api_url:
        return None
    return api_url.split("/rest/api/", 1)[0] + "/browse/" + key


def _before_fragment(url: str | None) -> str | None:
    return url.split("#", 1)[0] if url else None


_READERS: Final[dict[str, Callable[[Headers, JsonObject], Source | None]]] = {
    "github": _github,
    "gitlab": _gitlab,
    "slack": _slack,
    "linear": _linear,
    "jira": _jira,
}
