"""The stable, comparable form of a resource, and the fields that differ between two forms:
what apply stores, and what its plan shows as changed."""

from __future__ import annotations

from functools import cache
from typing import Any

from msgspec import Struct, UnsetType
from msgspec.structs import fields

__all__ = ["changed_fields", "comparable"]

# where a resource is written, not what it is (a skill's other files are what it is: compared)
_LOCATION_FIELDS = frozenset({"path"})


@cache
def _compared_fields(kind: type[Struct]) -> tuple[tuple[str, str], ...]:
    """(attribute, encoded name) of the Struct type's fields but the location: msgspec's
    `fields` resolves the type's annotations on every call, a plan compares hundreds of values."""
    return tuple((f.name, f.encode_name) for f in fields(kind) if f.name not in _LOCATION_FIELDS)


def comparable(value: Any) -> Any:
    """JSON-compatible plain data: Structs become mappings by their encoded field names
    (every field but the file `path`, which is where a resource is written, not what it is;
    undeclared (UNSET) fields left out), tuples become lists. Equal resources give equal
    forms, whichever file order or list order (of sets) the tree was written in."""
    if isinstance(value, Struct):
        return {
            encoded: comparable(field)
            for name, encoded in _compared_fields(type(value))
            if not isinstance(field := getattr(value, name), UnsetType)
        }
    if isinstance(value, dict):
        return {str(k): comparable(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [comparable(v) for v in value]
    return value


def changed_fields(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of what differs between two comparable forms (`effective.harness.model`,
    `triggers`); mappings are compared key by key, anything else as a whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        changed: list[str] = []
        for key in sorted(set(old) | set(new)):
            where = f"{prefix}.{key}" if prefix else key
            if key not in old or key not in new:
                changed.append(where)
            else:
                changed.extend(changed_fields(old[key], new[key], where))
        return changed
    return [] if old == new else [prefix or "."]
