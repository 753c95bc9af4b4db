"""A value built from a database row: its fields are the row's columns of the same names."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

T = TypeVar("T")


class _Overlay:
    """The row's columns, with `values` in front of them."""

    __slots__ = ("_row", "_values")

    def __init__(self, row: Any, values: dict[str, Any]) -> None:
        self._row = row
        self._values = values

    def __getattr__(self, name: str) -> Any:
        # only for names that are not slots: the fields msgspec reads
        values = self._values
        if name not in values:
            return getattr(self._row, name)
        value = values[name]
        if value is UNSET:  # absent: the field takes its default
            raise AttributeError(name)
        return value


def from_row(cls: type[T], row: Any, /, **values: Any) -> T:
    """A `cls` (a Struct or a dataclass) from the columns of `row` (a SQLAlchemy Row, or any
    object with attributes) named as its fields, validated as msgspec converts them; `values`
    give the fields the row does not hold under their names (derived ones, renamed columns) or
    replace a column's value (a JSON column made a Struct); UNSET in `values` leaves the
    field out (its default: UNSET, for the optional fields of a body). A field that is
    neither a column nor in `values` takes its default, or fails when it has none."""
    # always through the overlay: on a missing attribute msgspec goes on to index a Row (a
    # sequence) by the field's name, a TypeError, where the overlay's AttributeError makes it
    # the ValidationError that names the field
    return msgspec.convert(_Overlay(row, values), cls, from_attributes=True)
