"""The one exception type of the package, and JSON-path rendering for its messages."""

from __future__ import annotations

import json
import re

__all__ = ["FilterError", "child_path", "index_path"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class FilterError(ValueError):
    """A filter is invalid. ``path`` is a JSON path into the filter (``$.a.in[2]``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message

    def __reduce__(self) -> tuple[type[FilterError], tuple[str, str]]:
        return (type(self), (self.path, self.message))


def child_path(path: str, key: object) -> str:
    """``$`` + ``a`` -> ``$.a``; keys that are not identifiers -> ``$["a.b"]``."""
    if isinstance(key, str):
        if _IDENTIFIER.match(key):
            return f"{path}.{key}"
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}[{_safe_repr(key)}]"


def index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not escape as anything but FilterError
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."
