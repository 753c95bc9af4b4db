"""Comparison forms of filter values: the one place that says how a value is compared.

Normalizers put event values in these forms and the filter compiler puts the filter's values
in the same forms, so matching is plain equality (and substring search for ``keywords``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["KEYWORDS", "NAMES", "branch", "casefold", "emoji", "form_of", "names_key", "same"]

KEYWORDS: Final = "keywords"
"""The one key matched by substring, not equality: the event holds its case-folded text."""

NAMES: Final = ":names"
"""Suffix of the key holding the names of what a ``*_ids`` key identifies (a Linear team's name
and key, a state's name), where the payload tells them: what a by-name filter (Linear
``teams: [Platform]``, stored ``by_name``) is matched on. Names compare case-insensitively."""

_REFS_HEADS: Final = "refs/heads/"


def names_key(key: str) -> str:
    """The event values key of the names of ``key``'s ids (``team_ids`` -> ``team_ids:names``)."""
    return key + NAMES


def same(value: str) -> str:
    return value


def casefold(value: str) -> str:
    return value.casefold()


def branch(value: str) -> str:
    """``refs/heads/main`` and ``main`` are one branch."""
    return value[len(_REFS_HEADS) :] if value.startswith(_REFS_HEADS) else value


def emoji(value: str) -> str:
    """``:+1::skin-tone-2:``, ``+1::skin-tone-2`` and ``+1`` are one emoji."""
    return value.strip(":").split("::", 1)[0]


# GitHub: logins, teams and repositories are case-insensitive on GitHub itself (one account
# cannot be "Octocat" while another is "octocat"); labels and branches are not.
_GITHUB: Final[dict[str, Callable[[str], str]]] = {
    "repos": casefold,
    "assignees": casefold,
    "authors": casefold,
    "mentioned": casefold,
    "reviewers": casefold,
    "reviewer_teams": casefold,
    "branches": branch,
    "base_branches": branch,
    "conclusions": casefold,
    "review_states": casefold,
}
_GITLAB: Final[dict[str, Callable[[str], str]]] = {
    "repos": casefold,
    "base_branches": branch,
    "actions": casefold,
}
_FORMS: Final[dict[str, dict[str, Callable[[str], str]]]] = {
    "github": _GITHUB,
    "gitlab": _GITLAB,
    "linear": {"labels": casefold},  # Linear label names are case-insensitive (§4)
    "slack": {"emojis": emoji},
    # Jira labels are case-sensitive (§4): no entry, compared as given
}


def form_of(provider: str, key: str) -> Callable[[str], str]:
    """The comparison form of ``key``'s string values on ``provider``'s events."""
    if key == KEYWORDS or key.endswith(NAMES):
        return casefold
    return _FORMS.get(provider, {}).get(key, same)
