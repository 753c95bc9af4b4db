"""Where each key and value of a loaded document sits in its file."""

from __future__ import annotations

from .diagnostics import Position

__all__ = ["DocPath", "Positions", "render_path"]

DocPath = tuple[str | int, ...]
"""Keys and list indexes from the document root: ("triggers", 0, "filter")."""


class Positions:
    def __init__(self, root: Position) -> None:
        self._values: dict[DocPath, Position] = {(): root}
        self._keys: dict[DocPath, Position] = {}

    def set_value(self, path: DocPath, where: Position) -> None:
        self._values[path] = where

    def set_key(self, path: DocPath, where: Position) -> None:
        self._keys[path] = where

    def value(self, path: DocPath) -> Position:
        """Where the value at `path` starts; for a path that does not exist (a missing key),
        where its nearest existing ancestor's value does."""
        for end in range(len(path), -1, -1):
            found = self._values.get(path[:end])
            if found is not None:
                return found
        return self._values[()]

    def key(self, path: DocPath) -> Position:
        """Where the key that holds `path` is written; the value's place for list items."""
        return self._keys.get(path) or self.value(path)

    def holder(self, path: DocPath) -> Position:
        """Where to point at a problem of the mapping at `path` as a whole (a missing key):
        the key that holds it, or the start of the document for the root."""
        return self._keys.get(path) or self.value(path)


def render_path(path: DocPath) -> str:
    """("triggers", 0, "filter") -> "triggers[0].filter"."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
