"""Jira: a webhook delivery (``webhookEvent`` + changelog) -> trigger events (docs/providers.md).

Labels compare case-sensitively, as Jira keeps them. An update is read through its
changelog: labels added -> ``issue_labeled`` with the added labels, a new status ->
``status_changed`` with the new status id. An issue created with labels is also labeled.
``agent_session_created`` needs the connection's agent account (``bot``): an issue assigned
to it, or a description or comment that mentions it (``[~accountid:…]``).
"""

from __future__ import annotations

from typing import Any, Final

from gateway.kernel.types import JsonObject

from .event import EventValues, Headers, TriggerEvent
from .payload import dedupe, obj, objs, text

__all__ = ["NOT_IN_PAYLOAD", "delivery_id", "normalize"]

PROVIDER: Final = "jira"
# a comment delivery may carry a slim issue, without its labels
NOT_IN_PAYLOAD: Final[dict[str, frozenset[str]]] = {"agent_session_created": frozenset({"labels"})}


def delivery_id(headers: Headers, _payload: Any = None) -> str | None:
    """``X-Atlassian-Webhook-Identifier``: the same on Jira's retries of one delivery."""
    return headers.get("x-atlassian-webhook-identifier") or None


def normalize(headers: Headers, payload: Any, bot: str | None = None) -> list[TriggerEvent]:
    """The trigger events of one Jira delivery; ``bot`` is the agent's Atlassian account id."""
    kind = text(payload, "webhookEvent")
    issue = obj(payload, "issue")
    fields = obj(issue, "fields")
    project = text(obj(fields, "project"), "key")
    keys = [project] if project else []
    if kind == "jira:issue_created":
        return _created(fields, keys, bot)
    if kind == "jira:issue_updated":
        return _updated(payload, fields, keys, bot)
    if kind == "comment_created":
        return _commented(payload, fields, keys, bot)
    return []


def _labels(fields: JsonObject) -> list[str] | None:
    labels = fields.get("labels")
    if not isinstance(labels, list):
        return None
    return dedupe(label for label in labels if isinstance(label, str))


def _created(fields: JsonObject, keys: list[str], bot: str | None) -> list[TriggerEvent]:
    labels = _labels(fields) or []
    values: EventValues = {"project_keys": keys, "labels": labels}
    events = [TriggerEvent(PROVIDER, "issue_created", values)]
    if labels:
        events.append(TriggerEvent(PROVIDER, "issue_labeled", values))
    description = text(fields, "description")
    if bot and (_assignee(fields) == bot or _mentions(description, bot)):
        events.append(_agent_session(keys, labels, _issue_text(fields)))
    return events


def _updated(
    payload: JsonObject, fields: JsonObject, keys: list[str], bot: str | None
) -> list[TriggerEvent]:
    events: list[TriggerEvent] = []
    for item in objs(obj(payload, "changelog"), "items"):
        field = text(item, "fieldId") or (text(item, "field") or "").casefold()
        if field == "labels":
            before = set((text(item, "fromString") or "").split())
            added = [x for x in dedupe((text(item, "toString") or "").split()) if x not in before]
            if added:
                values: EventValues = {"project_keys": keys, "labels": added}
                events.append(TriggerEvent(PROVIDER, "issue_labeled", values))
        elif field == "status":
            status = text(item, "to")
            values = {"project_keys": keys, "status_ids": [status] if status else []}
            events.append(TriggerEvent(PROVIDER, "status_changed", values))
        elif field == "assignee" and bot and text(item, "to") == bot:
            events.append(_agent_session(keys, _labels(fields), _issue_text(fields)))
    return events


def _commented(
    payload: JsonObject, fields: JsonObject, keys: list[str], bot: str | None
) -> list[TriggerEvent]:
    comment = obj(payload, "comment")
    body = text(comment, "body")
    if not bot or not _mentions(body, bot):
        return []
    if text(obj(comment, "author"), "accountId") == bot:
        return []  # the agent naming itself in its own reply
    return [_agent_session(keys, _labels(fields), body or "")]


def _assignee(fields: JsonObject) -> str | None:
    return text(obj(fields, "assignee"), "accountId")


def _mentions(body: str | None, account_id: str) -> bool:
    return body is not None and f"[~accountid:{account_id}]" in body


def _issue_text(fields: JsonObject) -> str:
    return "\n".join(t for t in (text(fields, "summary"), text(fields, "description")) if t)


def _agent_session(keys: list[str], labels: list[str] | None, prompt: str) -> TriggerEvent:
    values: EventValues = {"project_keys": keys, "keywords": [prompt.casefold()] if prompt else []}
    if labels is not None:
        values["labels"] = labels
    return TriggerEvent(PROVIDER, "agent_session_created", values)
