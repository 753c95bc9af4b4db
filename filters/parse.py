"""Validate a filter (a value from ``json.loads``) into a ``Filter`` tree, and back to JSON.

Every fault raises ``FilterError`` with the JSON path of the fault; nothing else escapes,
whatever the input (non-string keys, NaN, huge integers, very deep nesting).
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import FilterError, child_path, index_path
from .limits import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_FILTER_BYTES,
    MAX_LIST_VALUES,
    MAX_NUMBER_DIGITS,
)
from .tree import AnyOf, Field, Filter, Nested, Operators, Scalar, Test

__all__ = ["filter_to_json", "parse_filter"]

OPERATORS = ("in", "not_in", "exists")
_INT_LIMIT = 10**MAX_NUMBER_DIGITS


def parse_filter(value: object) -> Filter | None:
    """``None`` -> ``None`` (no filter); a dict -> ``Filter``; anything else -> ``FilterError``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FilterError("$", f"a filter must be a JSON object, got {_describe(value)}")
    return _Parser().filter(value, "$", 1)


def filter_to_json(tree: Filter) -> dict[str, Any]:
    """The JSON form of a parsed filter; ``parse_filter(filter_to_json(t)) == t``."""
    out: dict[str, Any] = {}
    for field in tree.fields:
        out[field.key] = _test_to_json(field.test)
    return out


def _test_to_json(test: Test) -> Any:
    if isinstance(test, AnyOf):
        return list(test.values)
    if isinstance(test, Nested):
        return filter_to_json(test.filter)
    ops: dict[str, Any] = {}
    if test.in_ is not None:
        ops["in"] = list(test.in_)
    if test.not_in is not None:
        ops["not_in"] = list(test.not_in)
    if test.exists is not None:
        ops["exists"] = test.exists
    return ops


class _Parser:
    """One parse: counts conditions and compact-JSON bytes as it goes, failing early."""

    def __init__(self) -> None:
        self.conditions = 0
        self.size = 0

    def grow(self, nbytes: int) -> None:
        self.size += nbytes
        if self.size > MAX_FILTER_BYTES:
            raise FilterError(
                "$",
                f"the filter is larger than {MAX_FILTER_BYTES} bytes of compact JSON "
                "(the limit); split it or list fewer values",
            )

    def condition(self, path: str) -> None:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise FilterError(
                path, f"too many conditions: a filter may hold at most {MAX_CONDITIONS}"
            )

    def key(self, key: object, path: str) -> str:
        if not isinstance(key, str):
            raise FilterError(
                child_path(path, key), f"object keys must be strings, got {_describe(key)}"
            )
        self.grow(_json_len(key) + 1)  # key and colon
        return key

    def filter(self, obj: dict[Any, Any], path: str, depth: int) -> Filter:
        self.grow(1 + max(len(obj), 1))  # braces and commas
        fields: list[Field] = []
        for raw_key, value in obj.items():
            key = self.key(raw_key, path)
            fields.append(Field(key, self.test(value, child_path(path, key), depth)))
        return Filter(tuple(fields))

    def test(self, value: object, path: str, depth: int) -> Test:
        """``value`` sits in an object at ``depth``; an object value is at ``depth + 1``."""
        if isinstance(value, list):
            self.condition(path)
            return AnyOf(self.values(value, path, "a list of values"))
        if isinstance(value, dict):
            if depth + 1 > MAX_DEPTH:
                raise FilterError(
                    path,
                    f"nested too deeply: objects may be nested at most {MAX_DEPTH} levels "
                    "(the filter itself is level 1)",
                )
            if any(isinstance(k, str) and k in OPERATORS for k in value):
                return self.operators(value, path)
            return Nested(self.filter(value, path, depth + 1))
        raise FilterError(path, self.bare(value))

    def bare(self, value: object) -> str:
        scalar = _is_scalar(value)
        fault = _scalar_fault(value) if scalar else None
        head = f"expected a list of values or an object, got {_describe(value)}"
        if not scalar or fault is not None:
            return head
        text = json.dumps(value, ensure_ascii=False)
        return f"{head}; use [{text}] to match the value {text}"

    def operators(self, obj: dict[Any, Any], path: str) -> Operators:
        self.grow(1 + len(obj))  # braces and commas
        in_: tuple[Scalar, ...] | None = None
        not_in: tuple[Scalar, ...] | None = None
        exists: bool | None = None
        for raw_key, value in obj.items():
            key = self.key(raw_key, path)
            where = child_path(path, key)
            if key == "in" or key == "not_in":
                self.condition(where)
                if not isinstance(value, list):
                    raise FilterError(
                        where,
                        f'"{key}" takes a non-empty list of values, got {_describe(value)}'
                        f' (e.g. {{"{key}": ["a", "b"]}})',
                    )
                values = self.values(value, where, f'the "{key}" list')
                if key == "in":
                    in_ = values
                else:
                    not_in = values
            elif key == "exists":
                self.condition(where)
                if not isinstance(value, bool):
                    raise FilterError(
                        where, f'"exists" takes true or false, got {_describe(value)}'
                    )
                self.grow(5 if value is False else 4)
                exists = value
            else:
                used = ", ".join(k for k in obj if isinstance(k, str) and k in OPERATORS)
                raise FilterError(
                    where,
                    f'unknown operator "{key}" next to {used}: an operator object may only '
                    "use in, not_in and exists; to filter a nested field, put it in its own "
                    "object without operators",
                )
        return Operators(in_, not_in, exists)

    def values(self, items: list[Any], path: str, what: str) -> tuple[Scalar, ...]:
        if not items:
            raise FilterError(
                path,
                f"{what} must not be empty (it would match nothing); "
                'list at least one value, or use {"exists": false}',
            )
        if len(items) > MAX_LIST_VALUES:
            raise FilterError(
                path, f"{what} holds {len(items)} values; the limit is {MAX_LIST_VALUES}"
            )
        self.grow(1 + len(items))  # brackets and commas
        out: list[Scalar] = []
        for i, item in enumerate(items):
            where = index_path(path, i)
            if not _is_scalar(item):
                raise FilterError(
                    where,
                    f"list items must be strings, numbers, booleans or null, got {_describe(item)}",
                )
            fault = _scalar_fault(item)
            if fault is not None:
                raise FilterError(where, fault)
            self.grow(_json_len(item))
            out.append(item)
        return tuple(out)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float)  # bool is an int


def _scalar_fault(value: object) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"numbers must be finite, got {value!r}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
        return f"number too large (more than {MAX_NUMBER_DIGITS} digits)"
    return None


def _json_len(value: Scalar) -> int:
    """Bytes of ``value`` in compact UTF-8 JSON (lone surrogates count as 3 bytes)."""
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return len(str(value))
    return len(repr(value))


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(text, ensure_ascii=False)}"
    if isinstance(value, int | float):
        if _scalar_fault(value) is not None:
            return "a number"
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a value of Python type {type(value).__name__}"
