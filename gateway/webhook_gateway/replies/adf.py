"""Atlassian Document Format for Jira comments, built as a document from the Markdown that reply
templates write (markup.py): paragraphs (blank lines apart; a single line break is a hard
break), `- ` bullet lists, `#` headings, and inline `**bold**`, `` `code` `` and `[text](url)`
links, with backslash escapes. Anything else is text: Jira shows it as written."""

from __future__ import annotations

import re
from typing import Any

Node = dict[str, Any]
Mark = dict[str, Any]

_BULLET = re.compile(r"^\s*[-*] (.*)$")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_INLINE = re.compile(
    r"\\(?P<escaped>.)"
    r"|\*\*(?P<bold>(?:\\.|[^*\\])+)\*\*"
    r"|`(?P<code>[^`]+)`"
    r"|\[(?P<label>(?:\\.|[^\]\\])*)\]\((?P<href>https?://[^)\s]+)\)",
    re.DOTALL,
)


def document(markdown: str) -> Node:
    """The ADF document (`{"type": "doc", "version": 1, "content": [...]}`) of `markdown`."""
    blocks = [block for block in re.split(r"\n\s*\n", markdown.strip()) if block.strip()]
    content = [node for block in blocks for node in _block(block)]
    return {"type": "doc", "version": 1, "content": content or [_paragraph([])]}


def _block(block: str) -> list[Node]:
    lines = block.split("\n")
    if all(_BULLET.match(line) for line in lines):
        items = [_list_item(_BULLET.sub(r"\1", line)) for line in lines]
        return [{"type": "bulletList", "content": items}]
    nodes: list[Node] = []
    paragraph: list[str] = []
    for line in lines:
        heading = _HEADING.match(line)
        if heading is None:
            paragraph.append(line)
            continue
        if paragraph:
            nodes.append(_paragraph(paragraph))
            paragraph = []
        level = {"level": len(heading.group(1))}
        nodes.append({"type": "heading", "attrs": level, "content": inline(heading.group(2))})
    if paragraph:
        nodes.append(_paragraph(paragraph))
    return nodes


def _list_item(text: str) -> Node:
    return {"type": "listItem", "content": [_paragraph([text])]}


def _paragraph(lines: list[str]) -> Node:
    content: list[Node] = []
    for index, line in enumerate(lines):
        if index:
            content.append({"type": "hardBreak"})
        content.extend(inline(line))
    return {"type": "paragraph", "content": content}


def inline(text: str, marks: tuple[Mark, ...] = ()) -> list[Node]:
    """Text nodes of one line, with the marks of the markup around them."""
    nodes: list[Node] = []
    position = 0
    for match in _INLINE.finditer(text):
        _text(nodes, text[position : match.start()], marks)
        position = match.end()
        if match.group("escaped") is not None:
            _text(nodes, match.group("escaped"), marks)
        elif match.group("bold") is not None:
            nodes.extend(inline(match.group("bold"), (*marks, {"type": "strong"})))
        elif match.group("code") is not None:  # ADF lets code marks combine with links only
            links = tuple(mark for mark in marks if mark["type"] == "link")
            _text(nodes, match.group("code"), (*links, {"type": "code"}))
        else:
            href = {"type": "link", "attrs": {"href": match.group("href")}}
            nodes.extend(inline(match.group("label"), (*marks, href)))
    _text(nodes, text[position:], marks)
    return nodes


def _text(nodes: list[Node], text: str, marks: tuple[Mark, ...]) -> None:
    """Appends `text` (none when empty: ADF refuses empty text nodes), joined to the previous
    node when that has the same marks."""
    if not text:
        return
    last = nodes[-1] if nodes else None
    if last is not None and last.get("type") == "text" and last.get("marks", []) == list(marks):
        last["text"] += text
        return
    node: Node = {"type": "text", "text": text}
    if marks:
        node["marks"] = list(marks)
    nodes.append(node)
