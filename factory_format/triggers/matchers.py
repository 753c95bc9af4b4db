"""The matcher grammar every filter key shares: a bare list is `in`; `{in, not_in}` with no
value in both; null or empty imposes nothing. Values are typed per key (strings, or integers
for `pr_numbers`) and kept sorted and unique, so equal filters compare equal."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from msgspec import Struct, field

from filters import MAX_LIST_VALUES

from ..diagnostics import show
from ..positions import DocPath
from .catalogue import FilterKey, KeyAlias

__all__ = ["Matcher", "Report", "read_matcher"]

Value = str | int
Report = Callable[[DocPath, str], None]
"""Records a problem at a path relative to the matcher's value."""


class Matcher(Struct, frozen=True, omit_defaults=True, kw_only=True):
    """`by_name`: the values are names (Linear teams, Slack channels, ...) that apply
    resolves to ids; otherwise they are compared as written."""

    in_: tuple[Value, ...] = field(default=(), name="in")
    not_in: tuple[Value, ...] = ()
    by_name: bool = False


def read_matcher(
    raw: Any,
    key: FilterKey,
    alias: KeyAlias | None,
    report: Report,
    explain: Callable[[str], str | None] = lambda _value: None,
) -> Matcher | None:
    """The matcher of `raw` (already shaped by the schema: a list, {in, not_in} or null),
    None when it imposes nothing or is invalid (each problem reported). `explain` may give a
    better message for a string value that misses the key's pattern."""
    by_name = alias is not None and alias.by_name
    written = alias.name if alias else key.name
    if isinstance(raw, dict) and raw and by_name:
        report(
            (),
            f"`{written}` takes a plain list of names, like [Platform]; use "
            f"`{key.name}` for `in`/`not_in` on ids",
        )
        return None
    parts = _parts(raw)
    ok = all([_check_values(values, at, key, by_name, report, explain) for at, values in parts])
    ok = all([_check_count(values, at, key, written, report) for at, values in parts]) and ok
    included = next((v for at, v in parts if at != ("not_in",)), [])
    excluded = next((v for at, v in parts if at == ("not_in",)), [])
    if excluded and key.in_only:
        report(("not_in",), f"`{written}` takes only `in` (or a plain list): remove `not_in`")
        ok = False
    ok = _check_overlap(included, excluded, report) and ok
    if key.max_values is not None and len(set(included)) > key.max_values:
        report((), f"`{written}` takes at most {key.max_values} value")
        ok = False
    if not ok or not (included or excluded):
        return None
    return Matcher(in_=_canonical(included), not_in=_canonical(excluded), by_name=by_name)


def _parts(raw: Any) -> list[tuple[DocPath, list[Any]]]:
    if isinstance(raw, list):
        return [((), raw)]
    if isinstance(raw, dict):
        return [((op,), raw[op] or []) for op in ("in", "not_in") if op in raw]
    return []


def _check_values(
    values: list[Any],
    at: DocPath,
    key: FilterKey,
    by_name: bool,
    report: Report,
    explain: Callable[[str], str | None],
) -> bool:
    ok = True
    for index, value in enumerate(values):
        problem = _value_problem(value, key, by_name, explain)
        if problem is not None:
            report((*at, index), problem)
            ok = False
    return ok


def _value_problem(
    value: Any, key: FilterKey, by_name: bool, explain: Callable[[str], str | None]
) -> str | None:
    if key.value_type == "integer":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"`{key.name}` values are positive integers, like 42, without quotes"
        return None
    if not isinstance(value, str):
        return f'`{key.name}` values are strings; put it in quotes: "{value}"'
    if not value.strip():
        return f"`{key.name}` values must not be empty"
    if key.known_values and value not in key.known_values:
        return f"{show(value)} is not one of {', '.join(key.known_values)}"
    if key.pattern and not by_name and not re.match(key.pattern, value):
        return explain(value) or f"{show(value)} is not {key.pattern_hint}"
    return None


def _check_count(
    values: list[Any], at: DocPath, key: FilterKey, written: str, report: Report
) -> bool:
    """At most MAX_LIST_VALUES distinct values in one list, the limit the matchers the
    evaluator compiles hold to (a longer list would be stored and then never match); on a
    `distinct` key, no value twice."""
    ok = True
    if key.distinct:
        seen: set[Any] = set()
        for index, value in enumerate(values):
            if _hashable(value) and value in seen:
                report((*at, index), f"{show(value)} is listed twice in `{written}`; keep one")
                ok = False
            if _hashable(value):
                seen.add(value)
    distinct = {value for value in values if _hashable(value)}
    if len(distinct) > MAX_LIST_VALUES:
        report(at, f"`{written}` takes at most {MAX_LIST_VALUES} values, not {len(distinct)}")
        ok = False
    return ok


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int))


def _check_overlap(included: list[Any], excluded: list[Any], report: Report) -> bool:
    both = set(included) & set(excluded)
    for index, value in enumerate(excluded):
        if value in both:
            report(("not_in", index), f"{show(value)} is both in `in` and in `not_in`; keep one")
    return not both


def _canonical(values: list[Any]) -> tuple[Value, ...]:
    return tuple(sorted(set(values)))
