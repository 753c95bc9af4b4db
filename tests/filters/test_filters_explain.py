"""The mismatch explanation: what it says, and that it never disagrees with the matcher."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given

from filters import compile_filter, compile_many, explain, parse_filter
from tests.examples import at_least

from .strategies import FIXED, filter_and_payload


def test_explanation_is_none_exactly_when_the_compiled_matchers_match() -> None:
    outcomes: Counter[bool] = Counter()

    @FIXED
    @given(filter_and_payload())
    def check(case: tuple[dict[str, Any], Any]) -> None:
        raw, payload = case
        tree = parse_filter(raw)
        matched = compile_filter(tree)(payload)
        assert (explain(tree, payload) is None) is matched
        assert (compile_many({0: tree}).match(payload) == [0]) is matched
        if tree is not None and tree.fields:
            outcomes[matched] += 1

    check()
    total = outcomes[True] + outcomes[False]
    assert total > at_least(500)
    assert 0.15 < outcomes[True] / total < 0.85, outcomes  # both answers were exercised


@pytest.mark.parametrize(
    ("raw", "payload", "expected"),
    [
        ({"action": ["opened"]}, {"action": "closed"}, '$.action: "closed" not in ["opened"]'),
        ({"action": ["opened"]}, {}, '$.action: missing, expected one of ["opened"]'),
        ({"n": {"in": [1, 2]}}, {"n": 3}, "$.n: 3 not in [1, 2]"),
        ({"n": {"not_in": [1]}}, {"n": 1.0}, "$.n: 1.0 is in not_in [1]"),
        ({"n": {"not_in": [1]}}, {}, "$.n: missing, expected a value not in [1]"),
        ({"n": {"exists": True}}, {}, "$.n: missing, expected to exist"),
        ({"n": {"exists": False}}, {"n": None}, "$.n: null present, expected absent"),
        (
            {"pr": {"state": ["open"]}},
            {"pr": {"state": "merged"}},
            '$.pr.state: "merged" not in ["open"]',
        ),
        ({"pr": {"state": ["open"]}}, {"pr": "x"}, '$.pr: "x" is a string, expected an object'),
        (
            {"items": {"kind": ["a"]}},
            {"items": [{"kind": "b"}, {"kind": "c"}]},
            '$.items[*].kind: no element matches (first: "b" not in ["a"])',
        ),
        ({"a.b": ["x"]}, {"a.b": "y"}, '$["a.b"]: "y" not in ["x"]'),
        ({"a": ["x"]}, ["x"], "$: the body is an array, not a JSON object"),
    ],
)
def test_explanations_name_the_failing_path(
    raw: dict[str, Any], payload: Any, expected: str
) -> None:
    assert str(explain(parse_filter(raw), payload)) == expected


def test_the_first_failure_follows_the_filters_key_order() -> None:
    tree = parse_filter({"b": ["1"], "a": {"exists": True}})
    found = explain(tree, {"b": "2"})
    assert found is not None and found.path == "$.b"


def test_no_filter_and_empty_filter_explain_nothing() -> None:
    assert explain(None, 42) is None
    assert explain(parse_filter({}), "text") is None
