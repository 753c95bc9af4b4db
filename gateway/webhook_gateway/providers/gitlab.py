"""GitLab: a delivery (``X-Gitlab-Event`` + payload) -> trigger events (docs/providers.md).

The payload's ``object_kind`` decides (it is what the ``X-Gitlab-Event`` header names).
``repos`` is the project's ``path_with_namespace`` case-folded (GitLab paths are
case-insensitive), the factory's ``{owner, name}`` joined by ``/``.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.kernel.types import JsonObject

from .event import EventValues, Headers, TriggerEvent
from .mentions import gitlab_mentions
from .payload import obj, text
from .values import branch

__all__ = ["NOT_IN_PAYLOAD", "delivery_id", "normalize"]

PROVIDER: Final = "gitlab"
NOT_IN_PAYLOAD: Final[dict[str, frozenset[str]]] = {}
# comments on these carry the project's merge request or issue; commit and snippet comments
# are not conversations an automation is asked into
_NOTEABLE: Final = frozenset({"MergeRequest", "Issue"})


def delivery_id(headers: Headers, _payload: Any = None) -> str | None:
    """``Idempotency-Key`` (GitLab 17.4+: the same on every retry of one delivery), else
    ``X-Gitlab-Event-UUID`` (one per event)."""
    return headers.get("idempotency-key") or headers.get("x-gitlab-event-uuid") or None


def normalize(headers: Headers, payload: Any, bot: str | None = None) -> list[TriggerEvent]:
    """The trigger events of one GitLab delivery. ``bot`` is the connection's bot username:
    without it nothing is a ``bot_mentioned``."""
    if not isinstance(payload, dict):
        return []
    kind = payload.get("object_kind")
    project = text(obj(payload, "project"), "path_with_namespace")
    repos = [project.casefold()] if project else []
    if kind == "merge_request":
        return _merge_request(payload, project, repos, bot)
    if kind == "note":
        return _note(payload, project, repos, bot)
    if kind == "issue":
        return _issue(payload, project, repos, bot)
    return []


def _merge_request(
    payload: JsonObject, project: str | None, repos: list[str], bot: str | None
) -> list[TriggerEvent]:
    attrs = obj(payload, "object_attributes")
    action = text(attrs, "action")
    target = text(attrs, "target_branch")
    values: EventValues = {
        "repos": repos,
        "actions": [action.casefold()] if action else [],
        "base_branches": [branch(target)] if target else [],
    }
    events = [TriggerEvent(PROVIDER, "merge_request", values, project)]
    if action == "open" and _names(bot, text(attrs, "description")):
        events.append(_bot_mentioned(project, repos))
    return events


def _note(
    payload: JsonObject, project: str | None, repos: list[str], bot: str | None
) -> list[TriggerEvent]:
    attrs = obj(payload, "object_attributes")
    if attrs.get("action", "create") != "create" or attrs.get("system") is True:
        return []  # an edit, or GitLab's own "added label" note
    if text(attrs, "noteable_type") not in _NOTEABLE or not _names(bot, text(attrs, "note")):
        return []
    if text(obj(payload, "user"), "username") == bot:
        return []  # the bot naming itself in its own reply
    return [_bot_mentioned(project, repos)]


def _issue(
    payload: JsonObject, project: str | None, repos: list[str], bot: str | None
) -> list[TriggerEvent]:
    attrs = obj(payload, "object_attributes")
    if text(attrs, "action") != "open" or not _names(bot, text(attrs, "description")):
        return []
    return [_bot_mentioned(project, repos)]


def _names(bot: str | None, body: str | None) -> bool:
    if not bot:
        return False
    wanted = bot.casefold()
    return any(name.casefold() == wanted for name in gitlab_mentions(body))


def _bot_mentioned(project: str | None, repos: list[str]) -> TriggerEvent:
    return TriggerEvent(PROVIDER, "bot_mentioned", {"repos": repos}, project)
