"""store.rows.from_row: a Struct or dataclass from a row's columns of its fields' names, with
the fields the row does not hold given beside it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from msgspec import UNSET, Struct, UnsetType
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    Row,
    String,
    Table,
    create_engine,
    insert,
    select,
)

from gateway.foundation.store.rows import from_row
from gateway.foundation.store.types import UTCDateTime

metadata = MetaData()
things = Table(
    "things",
    metadata,
    Column("uid", String(64), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("note", String(64), nullable=True),
    Column("size", Integer, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class Thing(Struct, kw_only=True):
    uid: str
    name: str
    created_at: datetime
    label: str  # not a column
    note: str | UnsetType = UNSET
    size: int = 0


@dataclass(frozen=True)
class Plain:
    uid: str
    name: str


def _row(note: str | None, size: int | None = 3) -> Row[Any]:
    engine = create_engine("sqlite://")
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            insert(things).values(uid="t1", name="one", note=note, size=size, created_at=NOW)
        )
        return conn.execute(select(things)).one()


def test_fields_are_read_from_the_columns_of_their_names_and_values_from_beside() -> None:
    thing = from_row(Thing, _row("n"), label="L")
    assert thing == Thing(uid="t1", name="one", created_at=NOW, label="L", note="n", size=3)


def test_a_value_replaces_its_column_and_unset_leaves_the_field_out() -> None:
    row = _row(None, None)
    thing = from_row(Thing, row, label="L", note=UNSET, size=row.size or 0)
    assert thing.note is UNSET and thing.size == 0
    assert from_row(Thing, _row("n"), label="L", name="other").name == "other"


def test_a_required_field_neither_a_column_nor_given_fails() -> None:
    with pytest.raises(msgspec.ValidationError, match="label"):
        from_row(Thing, _row("n"))


def test_values_are_validated_as_msgspec_converts_them() -> None:
    with pytest.raises(msgspec.ValidationError, match="note"):
        from_row(Thing, _row(None), label="L")  # NULL is not a str: the caller says UNSET


def test_a_dataclass_takes_the_columns_it_names() -> None:
    assert from_row(Plain, _row("n")) == Plain("t1", "one")
