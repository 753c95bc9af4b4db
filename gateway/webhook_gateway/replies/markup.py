"""How a value is written into a reply's text, per dialect: Markdown (GitHub, GitLab, Linear,
and Jira, whose document is built from it: adf.py) and Slack's mrkdwn. A value is escaped so
that nothing in it (a run's title, a status message) formats, links or mentions; the helpers
templates call (`link`, `bold`) return `Raw` text, which is not escaped again."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote

Dialect = Literal["markdown", "mrkdwn"]

# CommonMark lets any ASCII punctuation be escaped; these can format, link, mention (@),
# start HTML or an entity (<, &), or a block (#, -, +, =, >, |) when a value spans lines
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-!|~@&=])")
_NUMBERED = re.compile(r"(?m)^(\s*\d+)\.")
_MRKDWN = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# what may stay as it is in a URL inside a link; anything else (spaces, parentheses, |, <, >,
# quotes) is percent-encoded so that it cannot end the link early
_URL_SAFE = ":/?#[]@!$&'*+,;=%~"


class Raw(str):
    """Text already written in the dialect: the template engine passes it through as it is."""

    __slots__ = ()


def escape(value: object, dialect: Dialect) -> str:
    text = "" if value is None else str(value)
    if dialect == "mrkdwn":
        return "".join(_MRKDWN.get(char, char) for char in text)
    return _NUMBERED.sub(r"\1\\.", _MARKDOWN.sub(r"\\\1", text))


def link(url: object, text: object, dialect: Dialect) -> Raw:
    """A link to `url` reading `text`; only the text when `url` is no http(s) URL."""
    shown = escape(text if text not in (None, "") else url, dialect)
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        return Raw(shown)
    target = quote(url, safe=_URL_SAFE)
    return Raw(f"<{target}|{shown}>" if dialect == "mrkdwn" else f"[{shown}]({target})")


def bold(text: object, dialect: Dialect) -> Raw:
    shown = escape(text, dialect)
    if not shown:
        return Raw("")
    return Raw(f"*{shown}*" if dialect == "mrkdwn" else f"**{shown}**")
