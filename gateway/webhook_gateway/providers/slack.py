"""Slack: an Events API delivery (``event_callback``) -> trigger events (docs/providers.md).

Channel and user ids compare as given (``C…``, ``U…``); emojis without colons or skin tone;
``keywords`` search the message text.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.kernel.types import JsonObject

from .event import EventValues, Headers, TriggerEvent
from .payload import obj, text
from .values import emoji

__all__ = ["NOT_IN_PAYLOAD", "delivery_id", "normalize"]

PROVIDER: Final = "slack"
# reaction_added names the message reacted to, not its text
NOT_IN_PAYLOAD: Final[dict[str, frozenset[str]]] = {"reaction_added": frozenset({"keywords"})}

# message subtypes that are someone posting: edits, deletions, joins and topic changes are not
_POSTED_SUBTYPES: Final = frozenset({"file_share", "thread_broadcast", "bot_message", "me_message"})
_MESSAGE_EVENTS: Final[dict[str, tuple[str, ...]]] = {
    "channel": ("message_posted",),
    "group": ("message_posted",),  # a private channel
    "im": ("message_dm", "message_im"),  # message_dm: any direct message, 1:1 or group
    "mpim": ("message_dm", "message_mpim"),
}


def delivery_id(_headers: Headers, payload: Any) -> str | None:
    """The body's ``event_id``: the same on every retry (``X-Slack-Retry-Num``) of an event."""
    event_id = text(payload, "event_id")
    return event_id or None


def normalize(headers: Headers, payload: Any, bot: str | None = None) -> list[TriggerEvent]:
    """The trigger events of one Slack delivery. ``bot`` is the app's bot user id: its own
    messages start nothing (an agent replying in a channel must not trigger itself)."""
    if text(payload, "type") != "event_callback":
        return []  # url_verification, app_rate_limited, ... are not events
    event = obj(payload, "event")
    kind = text(event, "type")
    if kind == "app_mention":
        return [_message("app_mention", event)]
    if kind == "message":
        return _messages(event, bot)
    if kind == "reaction_added":
        return [_reaction(event)]
    if kind == "member_joined_channel":
        joined: EventValues = {
            "channel_ids": _one(event, "channel"),
            "user_ids": _one(event, "user"),
        }
        return [TriggerEvent(PROVIDER, "member_joined_channel", joined)]
    return []


def _one(container: JsonObject, key: str) -> list[str]:
    value = text(container, key)
    return [value] if value else []


def _message(name: str, event: JsonObject) -> TriggerEvent:
    body = text(event, "text")
    values: EventValues = {
        "channel_ids": _one(event, "channel"),
        "user_ids": _one(event, "user"),
        "keywords": [body.casefold()] if body else [],
    }
    return TriggerEvent(PROVIDER, name, values)


def _messages(event: JsonObject, bot: str | None) -> list[TriggerEvent]:
    subtype = event.get("subtype")
    if subtype is not None and subtype not in _POSTED_SUBTYPES:
        return []
    if bot and bot in (event.get("user"), event.get("bot_id")):
        return []
    names = _MESSAGE_EVENTS.get(text(event, "channel_type") or "", ())
    if not names:
        return []
    first = _message(names[0], event)
    # one delivery may be two events (message_dm and message_im): they share the values
    return [first, *(TriggerEvent(PROVIDER, name, first.values) for name in names[1:])]


def _reaction(event: JsonObject) -> TriggerEvent:
    item = obj(event, "item")
    reaction = text(event, "reaction")
    values: EventValues = {
        "channel_ids": _one(item, "channel"),
        "user_ids": _one(event, "user"),
        "emojis": [emoji(reaction)] if reaction else [],
        "item_user_ids": _one(event, "item_user"),
    }
    return TriggerEvent(PROVIDER, "reaction_added", values)
