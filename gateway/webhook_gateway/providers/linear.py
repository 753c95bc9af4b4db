"""Linear: a data-change or agent-session delivery -> trigger events (docs/providers.md).

An issue update is read through ``updatedFrom`` (the previous values of the fields that
changed): labels added -> ``issue_labeled`` with the added labels, a new state ->
``issue_state_changed``, a new assignee -> ``issue_assigned``. An issue created with labels or
an assignee is also labeled or assigned. Label names compare case-insensitively.

Where the payload carries the named object, the names of teams (name and key), projects,
states and a comment's issue (its identifier, ``KOR-57``) are kept beside their ids
(``names_key``): Linear's by-name filters (``teams: [Platform]``) match them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from gateway.kernel.types import JsonObject

from .event import EventValues, Headers, TriggerEvent
from .payload import dedupe, obj, objs, text
from .values import names_key

__all__ = ["NOT_IN_PAYLOAD", "delivery_id", "normalize"]

PROVIDER: Final = "linear"
_ISSUE_EVENTS: Final = ("issue_created", "issue_labeled", "issue_state_changed", "issue_assigned")
# Users mentioned in a description or comment are in its rich-text document
# (descriptionData / bodyData) when the payload carries one, and only then. A comment's
# issue is as complete as the payload makes it (older payloads name only its id and title).
NOT_IN_PAYLOAD: Final[dict[str, frozenset[str]]] = {
    **{event: frozenset({"mentioned_user_ids"}) for event in _ISSUE_EVENTS},
    "comment_created": frozenset(
        {"mentioned_user_ids", "team_ids", "project_ids", "state_ids", "labels"}
    ),
}
_MAX_DOCUMENT_NODES: Final = 5000  # a rich-text document is walked at most this far


def delivery_id(headers: Headers, _payload: Any = None) -> str | None:
    """``Linear-Delivery``: one id per delivery, kept on Linear's retries."""
    return headers.get("linear-delivery") or None


def normalize(headers: Headers, payload: Any, bot: str | None = None) -> list[TriggerEvent]:
    """The trigger events of one Linear delivery; ``bot`` is unused (Linear sends agent
    sessions only to the agent's own application)."""
    kind = text(payload, "type")
    action = text(payload, "action")
    if kind == "Issue":
        return _issue(payload, action)
    if kind == "Comment" and action == "create":
        return [_comment(obj(payload, "data"))]
    if kind == "AgentSessionEvent" and action == "created":
        return [_agent_session(obj(payload, "agentSession"))]
    return []


def _ids(*values: Any) -> list[str]:
    return dedupe(value for value in values if isinstance(value, str) and value)


def _label_names(issue: JsonObject, only: set[str] | None = None) -> list[str]:
    labels = objs(issue, "labels")
    if only is not None:
        labels = [label for label in labels if label.get("id") in only]
    return dedupe(n.casefold() for label in labels if isinstance(n := label.get("name"), str))


def _issue_values(issue: JsonObject, labels: list[str]) -> EventValues:
    values: EventValues = {
        "team_ids": _ids(issue.get("teamId"), obj(issue, "team").get("id")),
        "project_ids": _ids(issue.get("projectId"), obj(issue, "project").get("id")),
        "labels": labels,
        "state_ids": _ids(issue.get("stateId"), obj(issue, "state").get("id")),
        "assignee_ids": _ids(issue.get("assigneeId"), obj(issue, "assignee").get("id")),
        "creator_ids": _ids(issue.get("creatorId"), obj(issue, "creator").get("id")),
    }
    _put_names(values, "team_ids", obj(issue, "team"), ("name", "key"))
    _put_names(values, "project_ids", obj(issue, "project"), ("name",))
    _put_names(values, "state_ids", obj(issue, "state"), ("name",))
    mentioned = _mentioned_ids(issue.get("descriptionData"))
    if mentioned is not None:
        values["mentioned_user_ids"] = mentioned
    return values


def _put_names(values: EventValues, key: str, named: JsonObject, fields: tuple[str, ...]) -> None:
    """The names of ``key``'s ids, where the payload carries the named object (by-name filters
    match them; without it the payload cannot tell, and such a filter does not match)."""
    names = dedupe(n.casefold() for f in fields if isinstance(n := named.get(f), str) and n)
    if names:
        values[names_key(key)] = names


def _issue(payload: JsonObject, action: str | None) -> list[TriggerEvent]:
    issue = obj(payload, "data")
    labels = _label_names(issue)
    if action == "create":
        names = ["issue_created"]
        if labels:
            names.append("issue_labeled")
        if issue.get("assigneeId"):
            names.append("issue_assigned")
        values = _issue_values(issue, labels)
        return [TriggerEvent(PROVIDER, name, values) for name in names]
    if action != "update":
        return []
    before = obj(payload, "updatedFrom")
    events: list[TriggerEvent] = []
    if isinstance(before.get("labelIds"), list) and isinstance(issue.get("labelIds"), list):
        added = set(issue["labelIds"]) - set(before["labelIds"])
        if added:
            values = _issue_values(issue, _label_names(issue, added))
            events.append(TriggerEvent(PROVIDER, "issue_labeled", values))
    shared = _issue_values(issue, labels)
    if "stateId" in before and issue.get("stateId") != before["stateId"]:
        events.append(TriggerEvent(PROVIDER, "issue_state_changed", shared))
    if "assigneeId" in before and issue.get("assigneeId") not in (None, before["assigneeId"]):
        events.append(TriggerEvent(PROVIDER, "issue_assigned", shared))
    return events


def _comment(comment: JsonObject) -> TriggerEvent:
    issue = obj(comment, "issue")
    values: EventValues = {
        "issue_ids": _ids(comment.get("issueId"), issue.get("id")),
        "creator_ids": _ids(comment.get("userId"), obj(comment, "user").get("id")),
    }
    # the comment's issue, as far as the payload tells it (newer payloads carry more of it)
    for key, field, nested in (
        ("team_ids", "teamId", "team"),
        ("project_ids", "projectId", "project"),
        ("state_ids", "stateId", "state"),
    ):
        ids = _ids(issue.get(field), obj(issue, nested).get("id"))
        if ids:
            values[key] = ids
        _put_names(
            values, key, obj(issue, nested), ("name", "key") if nested == "team" else ("name",)
        )
    _put_names(values, "issue_ids", issue, ("identifier",))
    if isinstance(issue.get("labels"), list):
        values["labels"] = _label_names(issue)
    mentioned = _mentioned_ids(comment.get("bodyData"))
    if mentioned is not None:
        values["mentioned_user_ids"] = mentioned
    return TriggerEvent(PROVIDER, "comment_created", values)


def _agent_session(session: JsonObject) -> TriggerEvent:
    issue = obj(session, "issue")
    # the prompt: the comment that mentioned the agent, else the issue it was delegated
    prompt = text(obj(session, "comment"), "body")
    if prompt is None:
        prompt = "\n".join(t for t in (text(issue, "title"), text(issue, "description")) if t)
    values: EventValues = {
        "team_ids": _ids(issue.get("teamId"), obj(issue, "team").get("id")),
        "creator_ids": _ids(session.get("creatorId"), obj(session, "creator").get("id")),
        "keywords": [prompt.casefold()] if prompt else [],
    }
    _put_names(values, "team_ids", obj(issue, "team"), ("name", "key"))
    return TriggerEvent(PROVIDER, "agent_session_created", values)


def _mentioned_ids(document: Any) -> list[str] | None:
    """User ids of the mention nodes of a ProseMirror document; ``None`` if there is none."""
    if isinstance(document, str):  # some payloads carry the document as a JSON string
        try:
            document = json.loads(document)
        except ValueError:
            return None
    if not isinstance(document, dict):
        return None
    return dedupe(_mention_nodes(document))


def _mention_nodes(document: JsonObject) -> Iterator[str]:
    stack = [document]
    seen = 0
    while stack and seen < _MAX_DOCUMENT_NODES:
        node = stack.pop()
        seen += 1
        kind = node.get("type")
        # user mentions only ("suggestion_userMentions"), not issue or document mentions
        if isinstance(kind, str) and "usermention" in kind.casefold():
            user = obj(node, "attrs").get("id")
            if isinstance(user, str):
                yield user
        stack.extend(reversed(objs(node, "content")))
