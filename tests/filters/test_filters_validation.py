"""Validation errors: exact JSON paths, helpful messages, and limits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_FILTER_BYTES,
    MAX_LIST_VALUES,
    Filter,
    FilterError,
    filter_to_json,
    parse_filter,
)

ERRORS: list[tuple[Any, str, str]] = [
    ([], "$", "must be a JSON object, got a list"),
    ("x", "$", 'must be a JSON object, got the string "x"'),
    (3, "$", "must be a JSON object"),
    ({"action": "opened"}, "$.action", 'use ["opened"] to match the value "opened"'),
    ({"n": 5}, "$.n", "use [5] to match the value 5"),
    ({"b": True}, "$.b", "use [true] to match the value true"),
    ({"z": None}, "$.z", "use [null] to match the value null"),
    ({"a": []}, "$.a", "must not be empty"),
    ({"a": {"in": []}}, "$.a.in", "must not be empty"),
    ({"a": {"not_in": []}}, "$.a.not_in", "must not be empty"),
    ({"a": {"in": "x"}}, "$.a.in", '"in" takes a non-empty list of values'),
    ({"a": {"not_in": {"x": 1}}}, "$.a.not_in", '"not_in" takes a non-empty list'),
    (
        {"pull_request": {"labels": {"in": ["a", "b", {"x": 1}]}}},
        "$.pull_request.labels.in[2]",
        "list items must be strings, numbers, booleans or null, got an object",
    ),
    ({"a": ["x", ["y"]]}, "$.a[1]", "got a list"),
    ({"a": {"exists": "yes"}}, "$.a.exists", '"exists" takes true or false, got the string'),
    ({"a": {"exists": 1}}, "$.a.exists", "takes true or false, got the number 1"),
    ({"a": {"in": ["x"], "name": ["y"]}}, "$.a.name", 'unknown operator "name"'),
    ({"a": {"exists": True, "eq": ["y"]}}, "$.a.eq", "may only use in, not_in and exists"),
    ({"a.b": "x"}, '$["a.b"]', 'use ["x"]'),
    ({"": "x"}, '$[""]', "expected a list of values or an object"),
    ({"a": {"b c": {"d": 1}}}, '$.a["b c"].d', "use [1]"),
    ({1: ["x"]}, "$[1]", "object keys must be strings, got the number 1"),
    ({"a": {None: ["x"]}}, "$.a[None]", "object keys must be strings, got null"),
    ({"a": [float("nan")]}, "$.a[0]", "numbers must be finite"),
    ({"a": {"in": [1, float("inf")]}}, "$.a.in[1]", "numbers must be finite"),
    ({"a": [10**5000]}, "$.a[0]", "number too large"),
    ({"a": float("-inf")}, "$.a", "got a number"),
    ({"a": (1, 2)}, "$.a", "got a value of Python type tuple"),
    ({"a": [b"x"]}, "$.a[0]", "got a value of Python type bytes"),
]


@pytest.mark.parametrize(("raw", "path", "message"), ERRORS)
def test_errors_name_the_path(raw: Any, path: str, message: str) -> None:
    with pytest.raises(FilterError) as info:
        parse_filter(raw)
    assert info.value.path == path
    assert message in info.value.message
    assert str(info.value) == f"{path}: {info.value.message}"
    assert isinstance(info.value, ValueError)


def test_none_is_no_filter_and_empty_is_match_all() -> None:
    assert parse_filter(None) is None
    assert parse_filter({}) == Filter(())


def _nest(depth: int) -> dict[str, Any]:
    tree: dict[str, Any] = {"leaf": ["x"]}
    for _ in range(depth - 1):
        tree = {"k": tree}
    return tree


def test_depth_limit() -> None:
    assert parse_filter(_nest(MAX_DEPTH)) is not None
    with pytest.raises(FilterError) as info:
        parse_filter(_nest(MAX_DEPTH + 1))
    assert info.value.path == "$" + ".k" * MAX_DEPTH
    assert "nested too deeply" in info.value.message
    # an operator object is an object level too
    ops: dict[str, Any] = {"in": ["x"]}
    for _ in range(MAX_DEPTH):
        ops = {"k": ops}
    with pytest.raises(FilterError, match="nested too deeply"):
        parse_filter(ops)


def test_very_deep_input_fails_without_recursion_error() -> None:
    tree: dict[str, Any] = {}
    for _ in range(100_000):
        tree = {"k": tree}
    with pytest.raises(FilterError, match="nested too deeply"):
        parse_filter(tree)


def test_list_limit() -> None:
    assert parse_filter({"a": list(range(MAX_LIST_VALUES))}) is not None
    with pytest.raises(FilterError) as info:
        parse_filter({"a": {"not_in": list(range(MAX_LIST_VALUES + 1))}})
    assert info.value.path == "$.a.not_in"
    assert f"holds {MAX_LIST_VALUES + 1} values; the limit is {MAX_LIST_VALUES}" in str(info.value)


def test_condition_limit() -> None:
    ok = {f"k{i}": ["x"] for i in range(MAX_CONDITIONS)}
    assert parse_filter(ok) is not None
    over: dict[str, Any] = {f"k{i}": {"exists": True} for i in range(MAX_CONDITIONS)}
    over["last"] = {"in": ["x"]}
    with pytest.raises(FilterError) as info:
        parse_filter(over)
    assert info.value.path == "$.last.in"
    assert f"at most {MAX_CONDITIONS}" in info.value.message


def _sized(nbytes: int) -> dict[str, Any]:
    """A filter of exactly ``nbytes`` bytes of compact JSON (multi-byte characters included)."""
    raw: dict[str, Any] = {"é": {}, "s": [""]}
    filler = nbytes - len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())
    raw["s"] = ["x" * (filler - 2) + "é"]  # é is 2 bytes
    assert len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode()) == nbytes
    return raw


def test_size_limit_is_exact_compact_utf8() -> None:
    assert parse_filter(_sized(MAX_FILTER_BYTES)) is not None
    with pytest.raises(FilterError) as info:
        parse_filter(_sized(MAX_FILTER_BYTES + 1))
    assert info.value.path == "$"
    assert str(MAX_FILTER_BYTES) in info.value.message


def test_size_limit_counts_escapes_and_operators() -> None:
    raw = {"a": {"in": ['"\\\n' * 100] * 10, "exists": True}, "b": [1.5, None, False]}
    compact = json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode()
    assert parse_filter(raw) is not None
    assert len(compact) < MAX_FILTER_BYTES
    big = {"a": {"in": ['"' * 1000] * 9}}  # 9 strings of 2002 bytes each
    with pytest.raises(FilterError, match="larger than"):
        parse_filter(big)


def test_to_json_round_trip_keeps_the_form() -> None:
    raw = {
        "a": ["x", 1, 1.5, True, None],
        "b": {"in": ["y"], "not_in": [2], "exists": True},
        "c": {"d": {}, "e.f": {"exists": False}},
    }
    tree = parse_filter(raw)
    assert tree is not None
    assert filter_to_json(tree) == raw
    assert parse_filter(filter_to_json(tree)) == tree


def test_error_pickles() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(FilterError("$.a", "bad")))
    assert (err.path, err.message, str(err)) == ("$.a", "bad", "$.a: bad")
