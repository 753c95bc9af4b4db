"""Markdown resources: a `---` line, YAML frontmatter, a closing `---` line, then the body
(the prompt, rubric or playbook)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FrontmatterError", "SplitMarkdown", "split_frontmatter"]

FENCE = "---"


@dataclass(frozen=True)
class SplitMarkdown:
    frontmatter: str  # the YAML between the fences; its first line is line 2 of the file
    body: str  # everything after the closing fence line, as written


class FrontmatterError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def split_frontmatter(text: str) -> SplitMarkdown:
    lines = text.split("\n")
    if lines[0].rstrip() != FENCE:
        raise FrontmatterError(
            1,
            "a Markdown resource starts with a line holding only `---`, then its YAML "
            "frontmatter, then another `---` line, then the body; add the opening `---` line",
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == FENCE:
            return SplitMarkdown("\n".join(lines[1:index]), "\n".join(lines[index + 1 :]))
    raise FrontmatterError(
        1,
        "the frontmatter opened on line 1 is never closed: add a line holding only `---` "
        "after the last frontmatter key, before the body",
    )
