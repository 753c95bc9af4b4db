"""Trigger filters: parse once into canonical conditions, compile into a predicate on events.

Grammar (factory-format.md §4): each canonical key takes a bare list (any of its values), or
``{in: [...], not_in: [...]}``; null, ``[]``, ``{}`` and empty lists impose nothing; keys are
ANDed and an omitted key matches everything. On a list-valued event field (several labels),
``in`` matches if any value is listed and ``not_in`` if none is; a key the event does not
carry (``NOT_IN_PAYLOAD``) matches neither, so such a filter never fires on a guess.

Values are put in the comparison form of ``values.py`` for the trigger's provider, the same
function the normalizers applied, so matching is the equality of the compiled matchers of
``filters/`` (``keywords``, a substring search, is the one check of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from filters import MAX_LIST_VALUES, AnyOf, Field, Filter, Operators
from filters.compile import compile_object
from filters.errors import child_path, index_path

from .event import EventValues, TriggerEvent
from .path_globs import GlobError, PathPatterns, compile_patterns
from .values import KEYWORDS, form_of

__all__ = [
    "Condition",
    "EventMatcher",
    "TriggerFilterError",
    "compile_trigger_filter",
    "failing_key",
    "parse_trigger_filter",
]

Value: TypeAlias = str | int
_INTEGER_KEYS: Final = frozenset({"pr_numbers"})
_IN_ONLY_KEYS: Final = frozenset({"schedule_ids"})
_OPERATORS: Final = frozenset({"in", "not_in"})
PATHS: Final = "paths"  # matched as GitHub's path globs (path_globs.py), not by equality
# the keys an index of equality filters cannot answer: checked after it (`EventMatcher.after`)
_AFTER: Final = frozenset({KEYWORDS, PATHS})
# keys a trigger may name that impose nothing: GitLab's `bot_mentioned` is the bot being
# mentioned, whatever `mentioned` says (§4: "accepted, no effect")
_NO_EFFECT: Final[dict[tuple[str, str], frozenset[str]]] = {
    ("gitlab", "bot_mentioned"): frozenset({"mentioned"}),
}


class TriggerFilterError(ValueError):
    """A trigger filter is invalid; ``path`` is a JSON path into it (``$.labels.in[2]``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class Condition:
    """One key of a filter, values in comparison form; ``None`` (or empty): no constraint."""

    key: str
    in_: tuple[Value, ...] | None = None
    not_in: tuple[Value, ...] | None = None


def parse_trigger_filter(
    provider: str, raw: object, event: str | None = None
) -> tuple[Condition, ...]:
    """Validate a trigger's ``filter`` (canonical keys) into the conditions it imposes on
    ``event`` (given, keys that have no effect on that event are dropped)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise TriggerFilterError("$", "a trigger filter must be an object of filter keys")
    ignored = _NO_EFFECT.get((provider, event or ""), frozenset())
    conditions: list[Condition] = []
    for key, matcher in raw.items():
        if not isinstance(key, str):
            raise TriggerFilterError("$", f"filter keys must be strings, got {key!r}")
        condition = _condition(provider, key, matcher, child_path("$", key))
        if key not in ignored and (condition.in_ or condition.not_in):
            conditions.append(condition)
    return tuple(conditions)


def _condition(provider: str, key: str, matcher: object, path: str) -> Condition:
    if matcher is None:
        return Condition(key)
    if isinstance(matcher, list):
        return Condition(key, _values(provider, key, matcher, path))
    if not isinstance(matcher, Mapping):
        raise TriggerFilterError(
            path, "expected a list of values or an object with in / not_in (or null)"
        )
    unknown = [k for k in matcher if k not in _OPERATORS]
    if unknown:
        raise TriggerFilterError(
            child_path(path, unknown[0]), "a matcher object takes only in and not_in"
        )
    in_, not_in = matcher.get("in"), matcher.get("not_in")
    if not_in and key in _IN_ONLY_KEYS:
        raise TriggerFilterError(child_path(path, "not_in"), f"{key} accepts only in")
    return Condition(
        key,
        _values(provider, key, in_, child_path(path, "in")) if in_ is not None else None,
        _values(provider, key, not_in, child_path(path, "not_in")) if not_in is not None else None,
    )


def _values(provider: str, key: str, items: object, path: str) -> tuple[Value, ...] | None:
    if not isinstance(items, list):
        raise TriggerFilterError(path, "expected a list of values")
    if len(items) > MAX_LIST_VALUES:
        raise TriggerFilterError(path, f"at most {MAX_LIST_VALUES} values")
    if key in _INTEGER_KEYS:
        for i, item in enumerate(items):
            if type(item) is not int:
                raise TriggerFilterError(index_path(path, i), f"{key} takes integers")
        return tuple(dict.fromkeys(items)) or None
    form = form_of(provider, key)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TriggerFilterError(index_path(path, i), f"{key} takes strings")
        if key == PATHS:
            try:
                compile_patterns([item])
            except GlobError as exc:
                raise TriggerFilterError(index_path(path, i), f"not a path pattern: {exc}") from exc
    if key == PATHS:  # in order: a `!` pattern excludes what the ones before it included
        return tuple(items) or None
    return tuple(dict.fromkeys(form(item) for item in items)) or None


ValuesCheck = Callable[[EventValues], bool]


class EventMatcher:
    """A compiled trigger filter: ``matcher(event) -> bool``, no parsing per call.

    Its parts, for callers that match many filters at once (``filters.compile_many`` indexes
    the equality filters of many triggers): ``equality``, the conditions of every key but
    ``keywords`` and ``paths`` as a ``filters`` Filter (None: none), and ``after``, the
    checks of those two (a substring search, path globs; None: none). The event matches when
    both hold."""

    __slots__ = ("_check", "after", "conditions", "equality")

    def __init__(self, conditions: tuple[Condition, ...]) -> None:
        self.conditions = conditions
        self.equality = _equality(conditions)
        self.after = _all(
            [
                _keywords(c) if c.key == KEYWORDS else _paths(c)
                for c in conditions
                if c.key in _AFTER
            ]
        )
        self._check = _compile(self.equality, self.after)

    def __call__(self, event: TriggerEvent) -> bool:
        return self._check(event.values)

    def __repr__(self) -> str:
        return f"EventMatcher({self.conditions!r})"


def compile_trigger_filter(provider: str, raw: object, event: str | None = None) -> EventMatcher:
    """Parse (``TriggerFilterError`` if invalid) and compile the filter of a ``provider``
    trigger on ``event``."""
    return EventMatcher(parse_trigger_filter(provider, raw, event))


def _always(_values: EventValues) -> bool:
    return True


def _equality(conditions: tuple[Condition, ...]) -> Filter | None:
    """The conditions of every key but `keywords`, as a filter of the filters/ matchers (list
    fields match `in` on any element, `not_in` on none); an `in`-only condition is the
    any-of form, which an index of many filters answers without running the check."""
    fields = tuple(
        Field(c.key, AnyOf(c.in_) if c.not_in is None and c.in_ else Operators(c.in_, c.not_in))
        for c in conditions
        if c.key not in _AFTER
    )
    return Filter(fields) if fields else None


def _all(checks: list[ValuesCheck]) -> ValuesCheck | None:
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    first, second = checks  # keywords and paths never share an event
    return lambda values: first(values) and second(values)


def _paths(condition: Condition) -> ValuesCheck:
    """GitHub's `paths` (`in`: at least one file included) and `paths-ignore` (`not_in`: not
    when every file is ignored) over the files the event names (path_globs.py)."""
    include = compile_patterns([str(p) for p in condition.in_ or ()]) if condition.in_ else None
    ignore = (
        compile_patterns([str(p) for p in condition.not_in or ()]) if condition.not_in else None
    )
    return lambda values: _paths_hold(include, ignore, values.get(PATHS))


def _paths_hold(
    include: PathPatterns | None, ignore: PathPatterns | None, files: list[Any] | None
) -> bool:
    if files is None:  # the payload does not name the files: no guess
        return False
    if ignore is not None and files and all(ignore.includes(str(f)) for f in files):
        return False
    return include is None or any(include.includes(str(f)) for f in files)


def _compile(equality: Filter | None, after: ValuesCheck | None) -> ValuesCheck:
    check = None if equality is None else compile_object(equality)
    if check is None:
        return after or _always
    if after is None:
        return check
    return lambda values: check(values) and after(values)


def _keywords(condition: Condition) -> ValuesCheck:
    wanted = tuple(str(k) for k in condition.in_ or ())
    banned = tuple(str(k) for k in condition.not_in or ())

    def check(values: EventValues) -> bool:
        texts = values.get(KEYWORDS)
        if texts is None:  # the payload does not tell the text: no guess
            return False
        # plain loops: a generator per call costs more than the search (~1 µs per matcher)
        for text in texts:
            for keyword in banned:
                if keyword in text:  # type: ignore[operator]
                    return False
        if not wanted:
            return True
        for text in texts:
            for keyword in wanted:
                if keyword in text:  # type: ignore[operator]
                    return True
        return False

    return check


def failing_key(conditions: tuple[Condition, ...], event: TriggerEvent) -> str | None:
    """The reference semantics, written out plainly: the first key (in the filter's order)
    the event fails, or ``None`` if it matches. Slow; for explanations and tests."""
    for condition in conditions:
        found = event.values.get(condition.key)
        if found is None:
            return condition.key
        if condition.key == PATHS:
            if not _paths(condition)(event.values):
                return condition.key
            continue
        hit = _contains_any if condition.key == KEYWORDS else _equals_any
        if condition.in_ and not hit(found, condition.in_):
            return condition.key
        if condition.not_in and hit(found, condition.not_in):
            return condition.key
    return None


def _equals_any(found: list[Any], listed: tuple[Value, ...]) -> bool:
    return any(value == wanted for value in found for wanted in listed)


def _contains_any(found: list[Any], listed: tuple[Value, ...]) -> bool:
    return any(str(wanted) in value for value in found for wanted in listed)
