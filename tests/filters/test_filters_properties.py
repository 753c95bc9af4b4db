"""Properties: compiled and many-filter matchers agree with the reference; parsing is total."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings

from filters import (
    FilterError,
    compile_filter,
    compile_many,
    filter_to_json,
    matches_reference,
    parse_filter,
)
from tests.examples import at_least, examples

from .strategies import ANYTHING, FIXED, filter_and_payload, filters, filters_and_payload


def test_compiled_matcher_agrees_with_reference() -> None:
    outcomes: Counter[bool] = Counter()

    @FIXED
    @given(filter_and_payload())
    def check(case: tuple[dict[str, Any], Any]) -> None:
        raw, payload = case
        tree = parse_filter(raw)
        expected = matches_reference(tree, payload)
        assert compile_filter(tree)(payload) is expected
        assert compile_many({0: tree}).match(payload) == ([0] if expected else [])
        if tree is not None and tree.fields:
            outcomes[expected] += 1

    check()
    total = outcomes[True] + outcomes[False]
    assert total > at_least(500)
    assert 0.15 < outcomes[True] / total < 0.85, outcomes  # the property is not vacuous


def test_many_filter_matcher_agrees_with_reference() -> None:
    hits = Counter[str]()

    @FIXED
    @given(filters_and_payload())
    def check(case: tuple[list[dict[str, Any] | None], Any]) -> None:
        raws, payload = case
        trees = {f"f{i}": parse_filter(raw) for i, raw in enumerate(raws)}
        expected = [key for key, tree in trees.items() if matches_reference(tree, payload)]
        assert compile_many(trees).match(payload) == expected
        nonempty = [key for key, raw in zip(trees, raws, strict=True) if raw]
        hits["checked"] += len(nonempty)
        hits["matched"] += len(set(nonempty) & set(expected))

    check()
    assert hits["checked"] > at_least(1000)
    assert 0.05 < hits["matched"] / hits["checked"] < 0.9, hits  # one filter in ~4 is targeted


@settings(max_examples=examples(1000), deadline=None, database=None)
@given(ANYTHING)
def test_validation_raises_only_filter_error(value: Any) -> None:
    try:
        tree = parse_filter(value)
    except FilterError as err:
        assert err.path.startswith("$")
        assert str(err) == f"{err.path}: {err.message}"
        return
    if tree is not None:
        assert parse_filter(filter_to_json(tree)) == tree


@settings(max_examples=examples(500), deadline=None, database=None)
@given(filters(depth=4))
def test_round_trip(raw: dict[str, Any]) -> None:
    tree = parse_filter(raw)
    assert tree is not None
    assert filter_to_json(tree) == raw
    assert parse_filter(filter_to_json(tree)) == tree
