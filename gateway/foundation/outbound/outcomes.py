"""What one outbound call came to: the message is there (`Delivered`), try again later
(`RetryLater`), or it never will be (`Failed`). A sender answers one of them for every message
the dispatcher hands it (gateway/foundation/outbound/dispatcher.py), and never raises for what the
other side or the network did.
"""

from __future__ import annotations

from msgspec import Struct


class Delivered(Struct, frozen=True, kw_only=True):
    """The message created or updated: its id at the other side (a comment id, a Slack `ts`),
    and a link a person can open, when the other side gives one."""

    message_id: str
    url: str | None = None


class RetryLater(Struct, frozen=True, kw_only=True):
    """A network error, a 5xx, a rate limit: `after` seconds the other side asked for
    (Retry-After, a reset time), else None and the kind's retry schedule decides. `status`: the
    HTTP status, when there was an answer."""

    error: str
    after: float | None = None
    status: int | None = None


class Failed(Struct, frozen=True, kw_only=True):
    """Refused for good (revoked token, no access, unknown channel, a private address): `error`
    is the other side's own word for why. `gone`: what the message updates, or hangs on, does
    not exist; `status`: the HTTP status of the refusal, when there was one."""

    error: str
    gone: bool = False
    status: int | None = None


Outcome = Delivered | RetryLater | Failed
