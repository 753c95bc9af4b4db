"""The reference interpreter: the semantics written out plainly. Slow, obviously correct."""

from __future__ import annotations

from typing import Any

from .tree import AnyOf, Filter, Nested, Operators, Scalar, Test

__all__ = ["matches_reference", "scalar_equal"]

_MISSING = object()


def matches_reference(tree: Filter | None, payload: Any) -> bool:
    """Does ``payload`` (a value from ``json.loads``) match the filter? ``None``: always."""
    if tree is None or not tree.fields:
        return True
    if not isinstance(payload, dict):
        return False
    return _object_matches(tree, payload)


def _object_matches(tree: Filter, obj: dict[str, Any]) -> bool:
    return all(_test_matches(field.test, obj.get(field.key, _MISSING)) for field in tree.fields)


def _test_matches(test: Test, value: Any) -> bool:
    if isinstance(test, AnyOf):
        return _is_in(value, test.values)
    if isinstance(test, Nested):
        if isinstance(value, dict):
            return _object_matches(test.filter, value)
        if isinstance(value, list):
            return any(
                isinstance(item, dict) and _object_matches(test.filter, item) for item in value
            )
        return False
    return _operators_match(test, value)


def _operators_match(test: Operators, value: Any) -> bool:
    present = value is not _MISSING
    if test.exists is not None and test.exists != present:
        return False
    if test.in_ is not None and not _is_in(value, test.in_):
        return False
    if test.not_in is not None:
        if not present:
            return False
        items = value if isinstance(value, list) else [value]
        if any(_listed(item, test.not_in) for item in items):
            return False
    return True


def _is_in(value: Any, values: tuple[Scalar, ...]) -> bool:
    """A missing field is in no list; an array field is in the list if any element is."""
    if value is _MISSING:
        return False
    items = value if isinstance(value, list) else [value]
    return any(_listed(item, values) for item in items)


def _listed(item: Any, values: tuple[Scalar, ...]) -> bool:
    return any(scalar_equal(item, wanted) for wanted in values)


def scalar_equal(a: Any, b: Any) -> bool:
    """JSON equality of scalars: numbers by value (1 == 1.0), otherwise types are strict."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return False
