"""A diagnostic: one problem of a tree, where it is and how to fix it."""

from __future__ import annotations

import json
from typing import Annotated, Any

from msgspec import Meta, Struct

from .codes import Code

__all__ = ["MAX_FILE_PROBLEMS", "Diagnostic", "Diagnostics", "Position", "show"]

# the problems of one file that are kept; past them a file's scan stops where it can (strict
# YAML, docs/factory-files.md "Limits"), and the rest are only counted (`omitted`): a file of
# 85,000 aliases is 20 diagnostics, not 85,000
MAX_FILE_PROBLEMS = 20


class Position(Struct, frozen=True):
    """1-based line and column in a file."""

    line: int
    column: int


class Diagnostic(Struct, frozen=True, kw_only=True):
    """`line` and `column` are 1-based; both null when the problem is about a whole file or
    the whole tree (a missing factory.yaml, a file over the size limit)."""

    path: str
    line: int | None
    column: int | None
    code: Annotated[str, Meta(description="an FF_* code (docs/factory-files.md)")]
    message: str

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line or 0, self.column or 0, self.code, self.message)


class Diagnostics:
    """Collects the diagnostics of one parse, in any order, each once; `sorted()` gives them
    by file and position. At most MAX_FILE_PROBLEMS of one file are kept: the others are
    counted in `omitted` (a lower bound: a file's scan stops soon after)."""

    def __init__(self) -> None:
        self._items: dict[Diagnostic, None] = {}
        self._per_file: dict[str, int] = {}
        self.omitted = 0

    def add(self, path: str, where: Position | None, code: Code, message: str) -> None:
        self._keep(
            Diagnostic(
                path=path,
                line=where.line if where else None,
                column=where.column if where else None,
                code=code.value,
                message=message,
            )
        )

    def extend(self, items: list[Diagnostic]) -> None:
        for item in items:
            self._keep(item)

    def _keep(self, item: Diagnostic) -> None:
        if item in self._items:
            return
        kept = self._per_file.get(item.path, 0)
        if kept >= MAX_FILE_PROBLEMS:
            self.omitted += 1
            return
        self._per_file[item.path] = kept + 1
        self._items[item] = None

    def full(self, path: str) -> bool:
        """Whether `path` has as many problems as are kept: its scan may stop."""
        return self._per_file.get(path, 0) >= MAX_FILE_PROBLEMS

    def __len__(self) -> int:
        return len(self._items)

    def sorted(self) -> tuple[Diagnostic, ...]:
        return tuple(sorted(self._items, key=Diagnostic.sort_key))


def show(value: Any) -> str:
    """A value for a message, as the author would write it, short."""
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value)
