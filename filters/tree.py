"""The parsed form of a filter: a small tree of frozen dataclasses.

``Filter`` is a conjunction of ``Field`` tests; each field test is one of
``AnyOf`` (a JSON array of values), ``Operators`` (``in`` / ``not_in`` / ``exists``)
or ``Nested`` (a nested filter applied to an object, or to the objects of an array).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["AnyOf", "Field", "Filter", "Nested", "Operators", "Scalar", "Test"]

Scalar: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class AnyOf:
    """``"key": [v1, v2]`` - the field equals one of the values."""

    values: tuple[Scalar, ...]


@dataclass(frozen=True, slots=True)
class Operators:
    """``"key": {"in": [...], "not_in": [...], "exists": bool}`` - every given operator holds."""

    in_: tuple[Scalar, ...] | None = None
    not_in: tuple[Scalar, ...] | None = None
    exists: bool | None = None


@dataclass(frozen=True, slots=True)
class Nested:
    """``"key": {...}`` - the field is an object (or an array holding one) matching ``filter``."""

    filter: Filter


Test: TypeAlias = AnyOf | Operators | Nested


@dataclass(frozen=True, slots=True)
class Field:
    key: str
    test: Test


@dataclass(frozen=True, slots=True)
class Filter:
    """All fields must match. No fields: matches every delivery."""

    fields: tuple[Field, ...] = ()
