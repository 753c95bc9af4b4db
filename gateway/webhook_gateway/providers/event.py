"""The normalized trigger event, and the read-only view of request headers normalizers take."""

from __future__ import annotations

from typing import NamedTuple, Protocol, TypeAlias

__all__ = ["EventValues", "Headers", "TriggerEvent"]

EventValues: TypeAlias = dict[str, list[str] | list[int]]
"""Canonical filter key -> the event's values for it, already in comparison form
(``values.py``). A key the payload cannot tell is absent; a key it tells as empty is ``[]``."""


class Headers(Protocol):
    """Request headers by lower-case name (a plain ``dict[str, str]`` satisfies it)."""

    def get(self, name: str, /) -> str | None: ...


class TriggerEvent(NamedTuple):
    """One provider event a delivery was normalized to (factory-format.md §4); a NamedTuple:
    made per delivery (a frozen dataclass's constructor cost twice as much).

    ``values`` holds, for each canonical filter key of the event, the values a trigger filter
    is matched on, in the comparison form of ``values.py`` (GitHub logins case-folded,
    branches without ``refs/heads/``, emojis without colons or skin tone, ...). The lists are
    built once per delivery and shared by every matcher: treat them as read-only.
    ``keywords`` holds the case-folded text the keywords are searched in.

    ``repository`` is the repository as the provider spells it (``owner/name``; a GitLab
    project's ``path_with_namespace``), for GitHub and GitLab events only: such an event
    reaches only the factories that list it (``reaches``).
    """

    provider: str
    event: str
    values: EventValues
    repository: str | None = None
