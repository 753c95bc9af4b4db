"""Compile a ``Filter`` tree once into nested closures; calling them does no parsing."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final

from .tree import AnyOf, Field, Filter, Nested, Operators, Scalar

__all__ = ["NO_KEY", "Matcher", "ObjectCheck", "compile_filter", "compile_object", "value_key"]

ObjectCheck = Callable[[dict[str, Any]], bool]
"""A compiled (sub)filter, applied to a JSON object."""

_MISSING: Final = object()
NO_KEY: Final = object()
"""``value_key`` of a value that equals no filter value (an object, an array, ...)."""
_TRUE: Final = ("b", True)
_FALSE: Final = ("b", False)
_NULL: Final = ("z", None)


def value_key(value: Any) -> Hashable:
    """A hash key with JSON equality: ``1`` and ``1.0`` share one, ``True``/``1``/``"1"`` don't.

    Strings are their own key (no other key is a ``str``).
    """
    if type(value) is str:
        return value
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int):
        return ("n", int(value))
    if isinstance(value, float):
        return ("n", int(value)) if value.is_integer() else ("n", value)
    if value is None:
        return _NULL
    if isinstance(value, str):
        return str(value)
    return NO_KEY


def _key_set(values: tuple[Scalar, ...]) -> frozenset[Hashable]:
    return frozenset(value_key(v) for v in values)


class Matcher:
    """A compiled filter: ``matcher(payload) -> bool``."""

    __slots__ = ("_check", "_empty", "filter")

    def __init__(self, tree: Filter | None) -> None:
        self.filter = tree
        self._empty = tree is None or not tree.fields
        self._check = compile_object(tree) if tree is not None else _always

    def __call__(self, payload: Any) -> bool:
        if self._empty:
            return True
        return isinstance(payload, dict) and self._check(payload)

    def __repr__(self) -> str:
        return f"Matcher({self.filter!r})"


def compile_filter(tree: Filter | None) -> Matcher:
    """Build the matcher once; ``None`` (no filter) and ``{}`` match every delivery."""
    return Matcher(tree)


def _always(_obj: dict[str, Any]) -> bool:
    return True


def compile_object(tree: Filter) -> ObjectCheck:
    """Compile a filter to a check of one JSON object (cheap tests first)."""
    checks = [_compile_field(field) for field in sorted(tree.fields, key=_cost)]
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks

        def both(obj: dict[str, Any]) -> bool:
            return first(obj) and second(obj)

        return both
    frozen = tuple(checks)

    def every(obj: dict[str, Any]) -> bool:
        for check in frozen:  # noqa: SIM110 - a loop is faster than all(genexpr)
            if not check(obj):
                return False
        return True

    return every


def _cost(field: Field) -> int:
    test = field.test
    if isinstance(test, Operators):
        return 0 if test.in_ is None and test.not_in is None else 1
    return 1 if isinstance(test, AnyOf) else 2


def _compile_field(field: Field) -> ObjectCheck:
    key = field.key
    test = field.test
    if isinstance(test, AnyOf):
        return _compile_in(key, _key_set(test.values))
    if isinstance(test, Nested):
        return _compile_nested(key, compile_object(test.filter))
    checks: list[ObjectCheck] = []
    if test.exists is not None:
        checks.append(_compile_exists(key, test.exists))
    if test.in_ is not None:
        checks.append(_compile_in(key, _key_set(test.in_)))
    if test.not_in is not None:
        checks.append(_compile_not_in(key, _key_set(test.not_in)))
    return compile_object_checks(checks)


def compile_object_checks(checks: list[ObjectCheck]) -> ObjectCheck:
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def every(obj: dict[str, Any]) -> bool:
        return all(check(obj) for check in frozen)

    return every


def _compile_exists(key: str, wanted: bool) -> ObjectCheck:
    if wanted:

        def exists(obj: dict[str, Any]) -> bool:
            return key in obj

        return exists

    def absent(obj: dict[str, Any]) -> bool:
        return key not in obj

    return absent


def _compile_in(key: str, keys: frozenset[Hashable]) -> ObjectCheck:
    if len(keys) == 1 and isinstance(only := next(iter(keys)), str):
        return _compile_equals_string(key, only)

    def is_in(obj: dict[str, Any]) -> bool:
        value = obj.get(key, _MISSING)
        if type(value) is str:
            return value in keys
        if isinstance(value, list):
            for item in value:  # noqa: SIM110 - faster than any(genexpr)
                if value_key(item) in keys:
                    return True
            return False
        return value is not _MISSING and value_key(value) in keys

    return is_in


def _compile_equals_string(key: str, wanted: str) -> ObjectCheck:
    def equals(obj: dict[str, Any]) -> bool:
        value = obj.get(key)
        if type(value) is str:
            return value == wanted
        if isinstance(value, list):
            for item in value:  # noqa: SIM110 - faster than any(genexpr)
                if isinstance(item, str) and item == wanted:
                    return True
            return False
        return isinstance(value, str) and value == wanted

    return equals


def _compile_not_in(key: str, keys: frozenset[Hashable]) -> ObjectCheck:
    def not_in(obj: dict[str, Any]) -> bool:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            return False
        if isinstance(value, list):
            for item in value:  # noqa: SIM110 - faster than any(genexpr)
                if value_key(item) in keys:
                    return False
            return True
        return value_key(value) not in keys

    return not_in


def _compile_nested(key: str, inner: ObjectCheck) -> ObjectCheck:
    def nested(obj: dict[str, Any]) -> bool:
        value = obj.get(key)
        if isinstance(value, dict):
            return inner(value)
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and inner(item):
                    return True
        return False

    return nested
