"""What one call to a provider's API came to: the message is there (`Delivered`), try again
later (`RetryLater`), or it never will be (`Failed`).

These mirror the outbound dispatcher's sender protocol (`send(message) -> delivered |
retry(after) | failed(error)`, docs/providers.md#replies): a sender adapts them one to one.
"""

from __future__ import annotations

from msgspec import Struct


class Delivered(Struct, frozen=True, kw_only=True):
    """The message created or updated: its id at the provider (a comment id, a Slack `ts`), and
    a link a person can open, when the provider gives one."""

    message_id: str
    url: str | None = None


class RetryLater(Struct, frozen=True, kw_only=True):
    """A network error, a 5xx, a rate limit: `after` seconds the provider asked for (Retry-After,
    a reset time), else None and the dispatcher's backoff decides."""

    error: str
    after: float | None = None


class Failed(Struct, frozen=True, kw_only=True):
    """The provider refused for good (revoked token, no access, unknown channel): `error` is its
    own word for why. `gone`: the message to update, or what it hangs on, does not exist;
    `status`: the HTTP status of the refusal, when there was one."""

    error: str
    gone: bool = False
    status: int | None = None


Outcome = Delivered | RetryLater | Failed
