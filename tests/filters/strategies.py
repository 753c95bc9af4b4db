"""Hypothesis strategies: random filters and payloads correlated with them."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.examples import examples

# the property tests' settings: many examples, the same every run (CI reproduces a failure)
FIXED = settings(
    max_examples=examples(800),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

KEYS = ["a", "b", "c", "a.b"]
SCALARS = st.sampled_from(["x", "y", "1", "", 0, 1, 1.0, 2.5, -1, True, False, None])
VALUE_LISTS = st.lists(SCALARS, min_size=1, max_size=3)
OPERATORS = st.fixed_dictionaries(
    {}, optional={"in": VALUE_LISTS, "not_in": VALUE_LISTS, "exists": st.booleans()}
).filter(bool)

JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=8,
)


def filters(depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """Valid filter JSON over a small vocabulary, so payloads often match."""
    values: st.SearchStrategy[Any] = VALUE_LISTS | OPERATORS
    if depth > 1:
        values = values | filters(depth - 1)
    return st.dictionaries(st.sampled_from(KEYS), values, max_size=3)


@st.composite
def payload_for(draw: st.DrawFn, raw: dict[str, Any]) -> dict[str, Any]:
    """An object that often (not always) satisfies ``raw``."""
    out: dict[str, Any] = {}
    for key in KEYS:
        roll = draw(st.integers(0, 9))
        absent_wanted = isinstance(raw.get(key), dict) and raw[key].get("exists") is False
        if absent_wanted and roll < 8:
            continue
        if key in raw and roll < 9:
            out[key] = draw(value_for(raw[key]))
        elif key not in raw and roll == 9:
            out[key] = draw(JSON)
    return out


def value_for(test: Any) -> st.SearchStrategy[Any]:
    if isinstance(test, list):
        wanted = st.sampled_from(test)
        return st.one_of(wanted, wanted, st.lists(wanted | SCALARS, max_size=3), SCALARS)
    if any(op in test for op in ("in", "not_in", "exists")):
        if "in" in test:
            wanted = st.sampled_from(test["in"])
            return st.one_of(wanted, wanted, st.lists(wanted | SCALARS, max_size=3), SCALARS)
        return st.one_of(SCALARS, st.lists(SCALARS, max_size=3))
    inner = payload_for(test)
    return st.one_of(inner, inner, st.lists(inner | JSON, max_size=3))


@st.composite
def filter_and_payload(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    raw = draw(filters())
    payload: Any = draw(JSON) if draw(st.integers(0, 9)) == 0 else draw(payload_for(raw))
    return raw, payload


@st.composite
def filters_and_payload(draw: st.DrawFn) -> tuple[list[dict[str, Any] | None], Any]:
    raws = draw(st.lists(filters() | st.none(), min_size=1, max_size=8))
    concrete = [raw for raw in raws if raw]
    payload: Any
    if concrete and draw(st.integers(0, 9)) > 0:
        payload = draw(payload_for(draw(st.sampled_from(concrete))))
    else:
        payload = draw(JSON)
    return raws, payload


ANY_KEYS = st.one_of(
    st.sampled_from(["in", "not_in", "exists", "a", "a.b", ""]),
    st.text(max_size=5),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(),
)
ANY_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(4300, 5000).map(lambda digits: 10**digits),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "é", b"x"]),
)
ANYTHING = st.recursive(
    ANY_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner),
        st.dictionaries(ANY_KEYS, inner, max_size=4),
    ),
    max_leaves=20,
)
