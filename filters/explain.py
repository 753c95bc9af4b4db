"""Why a payload does not match a filter: the first failing condition, as a JSON path.

This walks the same ``Filter`` tree the compiler compiles, with the semantics of the reference
interpreter (``reference.py``), so ``explain(tree, payload) is None`` exactly when the compiled
matcher says the payload matches (a property test holds them together). It is slower than the
compiled matcher and meant for payloads that did not match: the matcher answers first, the
explanation is asked only for a "no".

"First" follows the filter's own key order (the order the user wrote it in), not the compiled
matcher's cost order, so the answer is stable and reads like the filter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import child_path
from .reference import scalar_equal
from .tree import AnyOf, Filter, Nested, Operators, Scalar

__all__ = ["Mismatch", "explain"]

_MISSING = object()
_SHOWN_CHARS = 60  # a value quoted in an explanation is cut to this


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first condition a payload fails: where (``$.pull_request.state``) and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def explain(tree: Filter | None, payload: Any) -> Mismatch | None:
    """``None`` when ``payload`` matches ``tree``; else the first condition it fails."""
    if tree is None or not tree.fields:
        return None
    if not isinstance(payload, dict):
        return Mismatch("$", f"the body is {_kind(payload)}, not a JSON object")
    return _object(tree, payload, "$")


def _object(tree: Filter, obj: dict[str, Any], path: str) -> Mismatch | None:
    for field in tree.fields:
        where = child_path(path, field.key)
        value = obj.get(field.key, _MISSING)
        test = field.test
        if isinstance(test, AnyOf):
            found = _in(value, test.values, where)
        elif isinstance(test, Nested):
            found = _nested(test.filter, value, where)
        else:
            found = _operators(test, value, where)
        if found is not None:
            return found
    return None


def _in(value: Any, values: tuple[Scalar, ...], path: str) -> Mismatch | None:
    if value is _MISSING:
        return Mismatch(path, f"missing, expected one of {_show(list(values))}")
    items = value if isinstance(value, list) else [value]
    if any(scalar_equal(item, wanted) for item in items for wanted in values):
        return None
    return Mismatch(path, f"{_show(value)} not in {_show(list(values))}")


def _operators(test: Operators, value: Any, path: str) -> Mismatch | None:
    present = value is not _MISSING
    if test.exists is True and not present:
        return Mismatch(path, "missing, expected to exist")
    if test.exists is False and present:
        return Mismatch(path, f"{_show(value)} present, expected absent")
    if test.in_ is not None and (found := _in(value, test.in_, path)) is not None:
        return found
    if test.not_in is not None:
        if not present:
            return Mismatch(path, f"missing, expected a value not in {_show(list(test.not_in))}")
        items = value if isinstance(value, list) else [value]
        for item in items:
            if any(scalar_equal(item, banned) for banned in test.not_in):
                return Mismatch(path, f"{_show(item)} is in not_in {_show(list(test.not_in))}")
    return None


def _nested(tree: Filter, value: Any, path: str) -> Mismatch | None:
    if isinstance(value, dict):
        return _object(tree, value, path)
    if isinstance(value, list):
        objects = [item for item in value if isinstance(item, dict)]
        if not objects:
            return Mismatch(path, "an array with no object in it, expected an object")
        failures: list[Mismatch] = []
        for item in objects:
            found = _object(tree, item, path + "[*]")
            if found is None:
                return None
            failures.append(found)
        first = failures[0]
        return Mismatch(first.path, f"no element matches (first: {first.reason})")
    if value is _MISSING:
        return Mismatch(path, "missing, expected an object")
    return Mismatch(path, f"{_show(value)} is {_kind(value)}, expected an object")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
