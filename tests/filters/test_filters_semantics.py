"""The semantics table: every rule with examples, checked against all three matchers."""

from __future__ import annotations

from typing import Any

import pytest

from filters import compile_filter, compile_many, matches_reference, parse_filter

PR = {
    "action": "opened",
    "number": 7,
    "draft": None,
    "pull_request": {
        "labels": [{"name": "bug"}, {"name": "ui"}],
        "user": {"login": "octocat", "type": "User"},
    },
    "tags": ["a", "b", 3],
    "a.b": 1,
}

CASES: list[tuple[str, Any, Any, bool]] = [
    # empty / absent filters
    ("absent filter matches an object", None, PR, True),
    ("absent filter matches a non-object", None, [1], True),
    ("empty filter matches an object", {}, PR, True),
    ("empty filter matches a string body", {}, "text", True),
    ("empty filter matches a null body", {}, None, True),
    ("non-empty filter never matches an array body", {"action": ["opened"]}, [PR], False),
    ("non-empty filter never matches a null body", {"draft": {"exists": False}}, None, False),
    # arrays of values
    ("array: equals an item", {"action": ["closed", "opened"]}, PR, True),
    ("array: equals no item", {"action": ["closed"]}, PR, False),
    ("all keys must match", {"action": ["opened"], "number": [8]}, PR, False),
    ("all keys match", {"action": ["opened"], "number": [7]}, PR, True),
    ("numbers by value: 7 == 7.0", {"number": [7.0]}, PR, True),
    ("numbers by value: 1.5", {"x": [1.5]}, {"x": 1.5}, True),
    ('types strict: "7" != 7', {"number": ["7"]}, PR, False),
    ('types strict: 7 != "7"', {"x": [7]}, {"x": "7"}, False),
    ("types strict: true is not 1", {"x": [1]}, {"x": True}, False),
    ("types strict: 1 is not true", {"x": [True]}, {"x": 1}, False),
    ("types strict: false is not 0", {"x": [0]}, {"x": False}, False),
    ("types strict: 0.0 is not false", {"x": [False]}, {"x": 0.0}, False),
    ("booleans", {"x": [False]}, {"x": False}, True),
    ("[null] matches null", {"draft": [None]}, PR, True),
    ("[null] does not match a missing field", {"missing": [None]}, PR, False),
    ("missing field: array does not match", {"missing": ["x"]}, PR, False),
    ("array field: any element listed", {"tags": ["b"]}, PR, True),
    ("array field: numbers inside", {"tags": [3.0]}, PR, True),
    ("array field: nothing listed", {"tags": ["z"]}, PR, False),
    ("object field never equals a value", {"pull_request": [None]}, PR, False),
    ("keys are literal: a dot is one key", {"a.b": [1]}, PR, True),
    ("keys are literal: no path walking", {"a.b": [1]}, {"a": {"b": 1}}, False),
    # in
    ("in: like an array", {"action": {"in": ["opened"]}}, PR, True),
    ("in: missing field", {"missing": {"in": ["opened"]}}, PR, False),
    ("in: array field", {"tags": {"in": ["x", "a"]}}, PR, True),
    # not_in
    ("not_in: value not listed", {"action": {"not_in": ["closed"]}}, PR, True),
    ("not_in: value listed", {"action": {"not_in": ["opened"]}}, PR, False),
    ("not_in: missing field does not match", {"missing": {"not_in": ["x"]}}, PR, False),
    ("not_in: null is a value", {"draft": {"not_in": ["x"]}}, PR, True),
    ("not_in: null listed", {"draft": {"not_in": [None]}}, PR, False),
    ("not_in: array with none listed", {"tags": {"not_in": ["z"]}}, PR, True),
    ("not_in: array with one listed", {"tags": {"not_in": ["z", "a"]}}, PR, False),
    ("not_in: types strict", {"number": {"not_in": ["7"]}}, PR, True),
    # exists
    ("exists true: present", {"action": {"exists": True}}, PR, True),
    ("exists true: null counts as present", {"draft": {"exists": True}}, PR, True),
    ("exists true: missing", {"missing": {"exists": True}}, PR, False),
    ("exists false: missing", {"missing": {"exists": False}}, PR, True),
    ("exists false: present", {"draft": {"exists": False}}, PR, False),
    # several operators
    ("operators all hold", {"action": {"exists": True, "not_in": ["closed"]}}, PR, True),
    ("one operator fails", {"action": {"in": ["opened"], "not_in": ["opened"]}}, PR, False),
    # nested filters
    ("nested object", {"pull_request": {"user": {"login": ["octocat"]}}}, PR, True),
    ("nested object no match", {"pull_request": {"user": {"login": ["x"]}}}, PR, False),
    ("nested over array: any element", {"pull_request": {"labels": {"name": ["ui"]}}}, PR, True),
    (
        "nested over array: one element must match all",
        {"pull_request": {"labels": {"name": ["ui"], "color": {"exists": False}}}},
        PR,
        True,
    ),
    (
        "nested over array: conditions not split across elements",
        {"items": {"a": [1], "b": [2]}},
        {"items": [{"a": 1}, {"b": 2}]},
        False,
    ),
    ("nested over array: non-objects skipped", {"x": {"a": [1]}}, {"x": [1, [{"a": 1}]]}, False),
    ("nested on a scalar field", {"action": {"x": ["y"]}}, PR, False),
    ("nested on a missing field", {"missing": {"x": ["y"]}}, PR, False),
    ("{} nested: field is an object", {"pull_request": {}}, PR, True),
    ("{} nested: array holding an object", {"pull_request": {"labels": {}}}, PR, True),
    ("{} nested: array without objects", {"tags": {}}, PR, False),
    ("{} nested: scalar field", {"action": {}}, PR, False),
    ("{} nested: null field", {"draft": {}}, PR, False),
    ("{} nested: missing field", {"missing": {}}, PR, False),
]


@pytest.mark.parametrize(
    ("raw", "payload", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_semantics(raw: Any, payload: Any, expected: bool) -> None:
    tree = parse_filter(raw)
    assert matches_reference(tree, payload) is expected
    assert compile_filter(tree)(payload) is expected
    assert compile_many({"f": tree}).match(payload) == (["f"] if expected else [])


def test_many_returns_matching_keys_in_given_order() -> None:
    raws: dict[str, Any] = {case[0]: case[1] for case in CASES}
    multi = compile_many({name: parse_filter(raw) for name, raw in raws.items()})
    expected = [name for name, raw in raws.items() if matches_reference(parse_filter(raw), PR)]
    assert multi.match(PR) == expected
    assert len(expected) > 10


def test_many_array_payload_values_count_once() -> None:
    multi = compile_many({1: parse_filter({"tags": ["a", "b"]}), 2: None})
    assert multi.match({"tags": ["a", "b", "a"]}) == [1, 2]
    assert multi.match({"tags": []}) == [2]
    assert multi.match("body") == [2]


def test_many_takes_pairs_and_a_key_may_have_several_filters() -> None:
    multi = compile_many(
        [
            ("opened-or-closed", parse_filter({"action": ["opened"]})),
            ("labelled", parse_filter({"action": ["labeled"], "label": {"name": ["bug"]}})),
            ("opened-or-closed", parse_filter({"action": ["closed"]})),
            ("opened-or-closed", parse_filter({"action": ["opened", "reopened"]})),
        ]
    )
    assert multi.match({"action": "opened"}) == ["opened-or-closed", "opened-or-closed"]
    assert multi.match({"action": "closed"}) == ["opened-or-closed"]
    assert multi.match({"action": "reopened"}) == ["opened-or-closed"]
    assert multi.match({"action": "labeled", "label": {"name": "bug"}}) == ["labelled"]
    assert multi.match({"action": "labeled", "label": {"name": "docs"}}) == []
    assert len(multi) == 4


def test_many_nested_arrays_at_each_level() -> None:
    multi = compile_many({"deep": parse_filter({"a": {"b": {"c": [5]}}})})
    payload = {"a": [{"b": {"c": 1}}, {"b": [{"c": [2, 5.0]}]}]}
    assert multi.match(payload) == ["deep"]
    assert multi.match({"a": [[{"b": {"c": 5}}]]}) == []  # arrays in arrays are not followed
