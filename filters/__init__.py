"""Payload filters: parse and validate a JSON filter, then match webhook payloads against it.

Standalone: no I/O, no framework, no import of ``gateway``. See docs/filters.md.
"""

from __future__ import annotations

from .compile import Matcher, compile_filter
from .errors import FilterError
from .explain import Mismatch, explain
from .limits import MAX_CONDITIONS, MAX_DEPTH, MAX_FILTER_BYTES, MAX_LIST_VALUES
from .multi import MultiMatcher, compile_many
from .parse import filter_to_json, parse_filter
from .reference import matches_reference
from .tree import AnyOf, Field, Filter, Nested, Operators, Scalar, Test

__all__ = [
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_FILTER_BYTES",
    "MAX_LIST_VALUES",
    "AnyOf",
    "Field",
    "Filter",
    "FilterError",
    "Matcher",
    "Mismatch",
    "MultiMatcher",
    "Nested",
    "Operators",
    "Scalar",
    "Test",
    "compile_filter",
    "compile_many",
    "explain",
    "filter_to_json",
    "matches_reference",
    "parse_filter",
]
