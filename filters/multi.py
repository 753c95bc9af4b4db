"""Match one payload against many filters, sharing work (an Event-Ruler-like index).

Each filter gets one *anchor*: an equality condition (an array or an ``in`` list) that it
cannot match without, reached through plain object keys. The index maps
path -> value key -> filter ids. A delivery reads each indexed path once (following arrays at
every level, collecting every reachable value), looks the values up, and fully checks only
those candidates, plus the few filters with no anchor.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from .compile import ObjectCheck, compile_object, value_key
from .tree import AnyOf, Filter, Nested, Operators, Scalar

__all__ = ["MultiMatcher", "compile_many"]

K = TypeVar("K")
Path = tuple[str, ...]
Anchor = tuple[Path, tuple[Hashable, ...]]
_MISSING = object()


class MultiMatcher(Generic[K]):
    """``match(payload)`` -> keys of the matching filters, in the order they were given (a key
    given with several filters comes once per filter that matched).

    A process keeps the matchers of thousands of webhooks, so the structure is kept small:
    tuples, one shared empty tuple, and a bare int for the index entries naming one filter."""

    __slots__ = ("_always", "_checks", "_index", "_keys", "_scan")

    def __init__(
        self, filters: Mapping[K, Filter | None] | Sequence[tuple[K, Filter | None]]
    ) -> None:
        pairs = list(filters.items()) if isinstance(filters, Mapping) else list(filters)
        self._keys: tuple[K, ...] = tuple(key for key, _tree in pairs)
        trees = [tree for _key, tree in pairs]
        checks = [_check(tree) for tree in trees]
        self._checks: tuple[ObjectCheck | None, ...] = tuple(checks)
        # ids matched by every payload, object or not
        self._always = tuple(i for i, check in enumerate(checks) if check is None)
        anchors = [_anchors(tree) if tree is not None else [] for tree in trees]
        popularity: Counter[tuple[Path, Hashable]] = Counter()
        for options in anchors:
            for path, keys in options:
                popularity.update((path, key) for key in keys)
        tables: dict[Path, dict[Hashable, list[int]]] = {}
        scan: list[int] = []
        for i, options in enumerate(anchors):
            if self._checks[i] is None:
                continue
            if not options:
                scan.append(i)
                continue
            path, keys = min(
                options,
                key=lambda a: (sum(popularity[(a[0], k)] for k in a[1]), len(a[0]), len(a[1])),
            )
            table = tables.setdefault(path, {})
            for key in keys:
                ids = table.setdefault(key, [])
                if not ids or ids[-1] != i:
                    ids.append(i)
        self._scan = tuple(scan)
        self._index = tuple(
            (_extractor(path), {key: _frozen(ids) for key, ids in table.items()})
            for path, table in tables.items()
        )

    def __len__(self) -> int:
        return len(self._keys)

    def match(self, payload: Any) -> list[K]:
        keys = self._keys
        if not isinstance(payload, dict):
            return [keys[i] for i in self._always]
        checks = self._checks
        candidates: set[int] = set()
        for extract, table in self._index:
            for value in extract(payload):
                ids = table.get(value_key(value) if type(value) is not str else value)
                if isinstance(ids, int):
                    candidates.add(ids)
                elif ids is not None:
                    candidates.update(ids)
        hits = list(self._always)
        for i in candidates:
            check = checks[i]
            if check is not None and check(payload):
                hits.append(i)
        for i in self._scan:
            check = checks[i]
            if check is not None and check(payload):
                hits.append(i)
        hits.sort()
        return [keys[i] for i in hits]


def _frozen(ids: list[int]) -> int | tuple[int, ...]:
    return ids[0] if len(ids) == 1 else tuple(ids)


def _check(tree: Filter | None) -> ObjectCheck | None:
    """The full check of one filter; None for no filter (matches everything)."""
    if tree is None or not tree.fields:
        return None
    if len(tree.fields) == 1 and isinstance(tree.fields[0].test, AnyOf):
        # the filter IS its anchor: found in the index means matched. One shared function
        # instead of a closure per filter (most automation filters are like this one, and a
        # process keeps the matchers of thousands of webhooks)
        return _found_is_matched
    return compile_object(tree)


def _found_is_matched(_obj: dict[str, Any]) -> bool:
    return True


def compile_many(
    filters: Mapping[K, Filter | None] | Sequence[tuple[K, Filter | None]],
) -> MultiMatcher[K]:
    """Compile many filters (``None``: no filter, matches everything) into one matcher: a
    mapping of key to filter, or (key, filter) pairs when a key has several filters."""
    return MultiMatcher(filters)


def _anchors(tree: Filter) -> list[Anchor]:
    return list(_walk(tree, ()))


def _walk(tree: Filter, prefix: Path) -> Iterator[Anchor]:
    for field in tree.fields:
        path = (*prefix, field.key)
        test = field.test
        if isinstance(test, AnyOf):
            yield path, _keys(test.values)
        elif isinstance(test, Operators):
            if test.in_ is not None:
                yield path, _keys(test.in_)
        elif isinstance(test, Nested):
            yield from _walk(test.filter, path)


def _keys(values: tuple[Scalar, ...]) -> tuple[Hashable, ...]:
    # interned: the same event names recur in the filters of many webhooks
    keys = (value_key(v) for v in values)
    return tuple(dict.fromkeys(sys.intern(k) if type(k) is str else k for k in keys))


@functools.lru_cache(maxsize=4096)  # pure in `path`: matchers of many webhooks share one
def _extractor(path: Path) -> Callable[[dict[str, Any]], list[Any]]:
    """Every scalar-or-other value reachable at ``path`` (arrays followed at each level)."""
    if len(path) == 1:
        (only,) = path

        def top(obj: dict[str, Any]) -> list[Any]:
            value = obj.get(only, _MISSING)
            if value is _MISSING:
                return []
            if isinstance(value, list):
                return value
            return [value]

        return top

    inner, last = path[:-1], path[-1]

    def deep(obj: dict[str, Any]) -> list[Any]:
        current: list[dict[str, Any]] = [obj]
        for key in inner:
            found: list[dict[str, Any]] = []
            for parent in current:
                value = parent.get(key)
                if isinstance(value, dict):
                    found.append(value)
                elif isinstance(value, list):
                    found.extend(item for item in value if isinstance(item, dict))
            if not found:
                return []
            current = found
        out: list[Any] = []
        for parent in current:
            value = parent.get(last, _MISSING)
            if value is _MISSING:
                continue
            if isinstance(value, list):
                out.extend(value)
            else:
                out.append(value)
        return out

    return deep
