"""Which work items a provider delivery ends (docs/providers.md#work-items, "How a work item
ends"): a merged pull or merge request completes its own work item, the issues its description
closes (`Closes #12`, GitHub's and GitLab's closing keywords) and the work items whose runs
opened it; one closed unmerged cancels its own; a closed issue is complete (GitHub:
`state_reason` `completed`) or cancelled (`not_planned`).

Pure: a parsed payload and headers in, an `Ending` (or None: the delivery ends nothing) out.
Only a few events of two providers are read at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from .event import Headers
from .payload import obj, text

__all__ = ["CANCELLED", "DONE", "Ending", "ending_of"]

DONE: Final = "DONE"
CANCELLED: Final = "CANCELLED"
# GitHub's closing keywords (docs "Linking a pull request to an issue") and GitLab's default
# closing pattern: a keyword, an optional colon, then #12, owner/repo#12 or the issue's URL
_CLOSING: Final = re.compile(
    r"\b(?:close[sd]?|closing|fix(?:e[sd]|ing)?|resolve[sd]?|resolving|implement(?:s|ed|ing)?)"
    r":?\s+((?:[\w.-]+/[\w./-]+)?#\d+|https?://\S+/issues/\d+)",
    re.IGNORECASE,
)
_URL_ISSUE: Final = re.compile(r"https?://[^/\s]+/(.+?)/(?:-/)?issues/(\d+)$")
MAX_CLOSED = 20  # issues one description can close: a pasted list does not fan out further


@dataclass(frozen=True, slots=True)
class Ending:
    provider: str
    stage: str  # DONE | CANCELLED
    refs: tuple[str, ...]  # work item refs it ends directly (its own, the issues it closes)
    # a merged pull or merge request's page: the work items of `project` whose runs opened
    # it (a PULL_REQUEST artifact with that url) end too
    pull_url: str | None = None
    project: str | None = None


def ending_of(provider: str, headers: Headers, payload: Any) -> Ending | None:
    if not isinstance(payload, dict):
        return None
    if provider == "github":
        return _github(headers.get("x-github-event") or "", payload)
    if provider == "gitlab":
        return _gitlab(payload)
    return None


def _github(event: str, payload: dict[str, Any]) -> Ending | None:
    if payload.get("action") != "closed":
        return None
    repository = text(obj(payload, "repository"), "full_name")
    if not repository:
        return None
    if event == "pull_request":
        pull = obj(payload, "pull_request")
        number = pull.get("number")
        if not _is_number(number):
            return None
        own = f"{repository}#{number}"
        if pull.get("merged") is not True:
            return Ending("github", CANCELLED, (own,))
        closed = _closed_refs(text(pull, "body"), repository, "#")
        url = text(pull, "html_url")
        return Ending("github", DONE, _unique(own, *closed), url, repository)
    if event == "issues":
        issue = obj(payload, "issue")
        number = issue.get("number")
        if not _is_number(number) or isinstance(issue.get("pull_request"), dict):
            return None
        stage = CANCELLED if issue.get("state_reason") == "not_planned" else DONE
        return Ending("github", stage, (f"{repository}#{number}",))
    return None


def _gitlab(payload: dict[str, Any]) -> Ending | None:
    project = text(obj(payload, "project"), "path_with_namespace")
    attrs = obj(payload, "object_attributes")
    iid = attrs.get("iid")
    if not project or not _is_number(iid):
        return None
    kind, action = payload.get("object_kind"), attrs.get("action")
    if kind == "merge_request":
        own = f"{project}!{iid}"
        if action == "close":
            return Ending("gitlab", CANCELLED, (own,))
        if action != "merge":
            return None
        closed = _closed_refs(text(attrs, "description"), project, "#")
        return Ending("gitlab", DONE, _unique(own, *closed), text(attrs, "url"), project)
    if kind in ("issue", "work_item") and action == "close":
        return Ending("gitlab", DONE, (f"{project}#{iid}",))
    return None


def _closed_refs(body: str | None, project: str, mark: str) -> list[str]:
    """The issues a description closes, as work item refs (`owner/repo#12`); an issue of
    another repository keeps its own."""
    found: list[str] = []
    for match in _CLOSING.finditer(body or ""):
        named = match.group(1)
        url = _URL_ISSUE.match(named)
        if url is not None:
            where, number = url.group(1), url.group(2)
        else:
            where, _, number = named.rpartition("#")
        found.append(f"{where or project}{mark}{number}")
        if len(found) == MAX_CLOSED:
            break
    return found


def _unique(*refs: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(refs))


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
