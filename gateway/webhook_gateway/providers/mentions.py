"""@-mentions in Markdown text (GitHub and GitLab): who a comment or description names.

A mention is ``@login`` not preceded by a word character (``me@example.com`` mentions no one)
and not inside code (fenced blocks and inline code spans), as GitHub and GitLab render them.
GitHub team mentions (``@org/team``) count as ``org/team``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["github_mentions", "gitlab_mentions", "without_code"]

_CODE: Final = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
# GitHub logins: letters, digits and single inner hyphens, at most 39 characters
_GITHUB: Final = re.compile(
    r"(?<![\w@/.`-])@([A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})"
    r"(?:/([A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?))?(?![\w-])"
)
# GitLab usernames also take dots and underscores, but do not end in a dot or hyphen
_GITLAB: Final = re.compile(r"(?<![\w@/.`-])@([A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)")


def without_code(body: str) -> str:
    """`body` without its code blocks and spans (a mention inside code names no one)."""
    return _CODE.sub(" ", body) if "`" in body or "~~~" in body else body


def github_mentions(body: str | None) -> list[str]:
    """Logins (and ``org/team``) mentioned in ``body``, in order, once each, as written."""
    if not body or "@" not in body:  # most comments mention no one: skip the regex
        return []
    found: dict[str, None] = {}
    for match in _GITHUB.finditer(without_code(body)):
        login, team = match.groups()
        found[f"{login}/{team}" if team else login] = None
    return list(found)


def gitlab_mentions(body: str | None) -> list[str]:
    """Usernames mentioned in ``body``, in order, once each, as written."""
    if not body or "@" not in body:
        return []
    return list(dict.fromkeys(m.group(1) for m in _GITLAB.finditer(without_code(body))))
