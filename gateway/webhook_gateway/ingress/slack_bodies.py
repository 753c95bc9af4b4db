"""What Slack sends that is not a plain JSON event (docs/providers.md, Slack):

- the Events API's `url_verification` handshake, answered with its challenge (200) once the
  signature checked out, and recorded as no delivery;
- slash commands and interactivity, sent form-encoded: stored as JSON, the interactivity's
  `payload=` field as the JSON it holds, a slash command as an object of its fields.

The signature is always checked over the bytes as received, before any of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

import orjson

FORM = "application/x-www-form-urlencoded"


class Challenge(Exception):
    """The url_verification handshake: answer 200 with `body`, record nothing."""

    def __init__(self, body: bytes) -> None:
        super().__init__("slack url_verification")
        self.body = body


def as_json(headers: Mapping[str, str], body: bytes) -> bytes:
    """The body to store: form-encoded bodies turned into JSON; raises Challenge for the
    url_verification handshake."""
    content_type = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type == FORM:
        return _form_as_json(body)
    if b"url_verification" in body:  # cheap test first: almost every event is something else
        _check_challenge(body)
    return body


def _form_as_json(body: bytes) -> bytes:
    fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    payload = fields.get("payload")
    if payload is not None and len(fields) == 1:
        try:
            orjson.loads(payload)
            return payload.encode()
        except orjson.JSONDecodeError:
            pass  # not JSON after all: kept as a field like any other
    return orjson.dumps(fields)


def _check_challenge(body: bytes) -> None:
    try:
        event = orjson.loads(body)
    except orjson.JSONDecodeError:
        return
    if (
        isinstance(event, dict)
        and event.get("type") == "url_verification"
        and isinstance(event.get("challenge"), str)
    ):
        raise Challenge(orjson.dumps({"challenge": event["challenge"]}))
