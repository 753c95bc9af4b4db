"""Many rows per statement, values handed to the driver in its own form.

The evaluator writes hundreds of rows per batch. Through `conn.execute(insert(table), dicts)`
SQLAlchemy processes every value of every row through its type objects, which cost more than the
database's own work for the row. A `BulkInsert` compiles its statement once per dialect, encodes
each row with one small function per column that needs it (chosen once from the column's type)
and sends tuples through `exec_driver_sql`, in the caller's transaction: a few multi-row
statements (`BulkInsert.insert` says why).

Rows are encoded by `prepare`, before the transaction (SQLite has one writer: every microsecond
of Python inside a write transaction is one every other writer waits), and grouped by one
column, so the transaction can keep the groups it claimed (`Prepared.only`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.foundation.store.types import UTCDateTime

# PostgreSQL and SQLite both take at most 32,766 parameters in one statement
MAX_PARAMETERS = 30_000
# ... SQLite since 3.32; a build before it, or built with a lower limit, takes fewer: what this
# process's library allows (every connection of the process uses the same library)
with closing(sqlite3.connect(":memory:")) as _probe:
    SQLITE_PARAMETERS = min(MAX_PARAMETERS, _probe.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
# on SQLite, rows from this many on go as multi-row statements (`BulkInsert.insert`)
MULTI_ROWS_FROM = 64
Row = Mapping[str, Any]
Encode = Callable[[Any], Any]
Values = tuple[Any, ...]
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Prepared:
    """Rows encoded for one dialect, each with its value of the grouping column `column`."""

    column: str
    groups: list[Any]
    values: list[Values]

    def only(self, wanted: Collection[Any]) -> Prepared:
        """The rows whose group is in `wanted`."""
        kept = [(g, v) for g, v in zip(self.groups, self.values, strict=True) if g in wanted]
        return Prepared(self.column, [g for g, _ in kept], [v for _, v in kept])

    def unique(self) -> Prepared:
        """The first row of each group."""
        seen: dict[Any, Values] = {}
        for group, values in zip(self.groups, self.values, strict=True):
            seen.setdefault(group, values)
        return Prepared(self.column, list(seen), list(seen.values()))


class BulkInsert:
    """INSERT INTO `table` (`columns`) of many rows (mappings by column name; missing keys are
    NULL). Columns not listed take their defaults."""

    def __init__(self, table: Table, columns: Sequence[str]) -> None:
        unknown = [name for name in columns if name not in table.c]
        if unknown:
            raise ValueError(f"{table.name} has no column {unknown[0]}")
        self.table = table
        self.columns = tuple(columns)
        self._statements: dict[tuple[str, int, str | None], str] = {}
        self._taken: dict[tuple[str, int], str] = {}  # SQLite's, by (column, count)
        self._converters: dict[str, tuple[tuple[int, Encode], ...]] = {}
        # the row's values in column order; a missing key reads as None (NULL)
        keys = self.columns
        self._get: Callable[[Row], Values] = lambda row: tuple(map(row.get, keys))

    def prepare(self, dialect: Dialect, rows: Sequence[Row], group: str) -> Prepared:
        """`rows` encoded for `dialect`, grouped by their value of `group` (a column, or any
        other key the mappings hold)."""
        return Prepared(group, [row[group] for row in rows], self.encode(dialect, rows))

    async def insert(self, conn: AsyncConnection, rows: Prepared | Sequence[Row]) -> None:
        """All of `rows`: a few multi-row statements (`row_chunks`), then the rest, fewer
        than MULTI_ROWS_FROM, and all of a small batch, as one executemany.

        SQLite: sqlite3 releases the GIL around every step of a statement and takes it back
        after: an executemany of 1,000 rows takes it back 1,000 times, and while the event loop
        plans the next batch (pure Python) each of those waits for it. Measured in the evaluator
        bench: the delivery log's INSERT of a batch took ~4x its thread's CPU in wall time; as
        multi-row statements ~2x, and the evaluator alone evaluated 1.06-1.18x as many
        deliveries a second (medians of alternated pairs, docs/performance.md).
        PostgreSQL: an executemany is a statement execution a row in the server (its executor
        started and ended, a table's statement triggers fired); the evaluator alone evaluated
        1.2-1.3x as many deliveries a second with multi-row statements (docs/performance.md)."""
        values = rows.values if isinstance(rows, Prepared) else self.encode(conn.dialect, rows)
        done = 0
        limit = parameter_limit(conn.dialect.name)
        for start, count in row_chunks(len(values), len(self.columns), limit):
            flat = tuple(chain.from_iterable(values[start : start + count]))
            await conn.exec_driver_sql(self.sql(conn.dialect, count), flat)
            done = start + count
        if done < len(values):  # the few rows left (all of a small batch's): one executemany
            await conn.exec_driver_sql(self.sql(conn.dialect, 0), values[done:])

    async def insert_new(self, conn: AsyncConnection, rows: Prepared) -> set[Any]:
        """The rows whose group (a unique column) is not taken yet; returns the groups it
        inserted.

        PostgreSQL: ON CONFLICT DO NOTHING RETURNING; a row another transaction is inserting
        waits for that one to end, so two writers never both see a key as new. SQLite has one
        writer at a time: the taken keys are read first and the others inserted by executemany
        (a multi-row VALUES ... RETURNING cost twice as much there)."""
        rows = rows.unique()
        if conn.dialect.name == "sqlite":
            return await self._insert_new_sqlite(conn, rows)
        inserted: set[Any] = set()
        size = max(1, MAX_PARAMETERS // len(self.columns))
        for start in range(0, len(rows.values), size):
            chunk = rows.values[start : start + size]
            sql = self.sql(conn.dialect, len(chunk), returning=rows.column)
            result = await conn.exec_driver_sql(sql, tuple(v for row in chunk for v in row))
            inserted.update(row[0] for row in result)
        return inserted

    async def _insert_new_sqlite(self, conn: AsyncConnection, rows: Prepared) -> set[Any]:
        taken: set[Any] = set()
        for start in range(0, len(rows.groups), SQLITE_PARAMETERS):
            wanted = tuple(rows.groups[start : start + SQLITE_PARAMETERS])
            sql = self._taken_sql(conn.dialect, rows.column, len(wanted))
            taken.update(row[0] for row in await conn.exec_driver_sql(sql, wanted))
        fresh = rows.only(set(rows.groups) - taken)
        await self.insert(conn, fresh)
        return set(fresh.groups)

    def _taken_sql(self, dialect: Dialect, column: str, count: int) -> str:
        """The SELECT of the values of `column` among `count` given ones, as text: a select
        built per batch (its IN list coerced value by value) cost ~2 µs a delivery."""
        key = (column, count)
        cached = self._taken.get(key)
        if cached is not None:
            return cached
        table, name = (dialect.identifier_preparer.quote(n) for n in (self.table.name, column))
        markers = ", ".join(_marker(dialect, i) for i in range(count))
        sql = f"SELECT {name} FROM {table} WHERE {name} IN ({markers})"
        if len(self._taken) < 512:  # one per batch size seen; batch sizes are bounded
            self._taken[key] = sql
        return sql

    def encode_value(self, dialect: Dialect, column: str, value: Any) -> Any:
        """One value of `column` as the driver takes it."""
        return self.encoder(dialect, column)(value)

    def encoder(self, dialect: Dialect, column: str) -> Encode:
        """How a value of `column` goes to the driver, for callers that build rows in column
        order themselves (the evaluator's runs)."""
        return _encoder(self.table.c[column].type, dialect) or _as_is

    def encode(self, dialect: Dialect, rows: Sequence[Row]) -> list[Values]:
        """Each row as the driver takes it: the values in column order (one C call per row),
        then the few that need converting (times, JSON)."""
        converters = self._converters.get(dialect.name)
        if converters is None:
            converters = self._converters[dialect.name] = tuple(
                (i, encode)
                for i, name in enumerate(self.columns)
                if (encode := _encoder(self.table.c[name].type, dialect)) is not None
            )
        get = self._get
        if not converters:
            return [get(row) for row in rows]
        # rows of a batch share their few timestamps and small JSON values: each is encoded once
        memo: dict[tuple[Encode, Any], Any] = {}
        encoded = []
        for row in rows:
            values = list(get(row))
            for i, encode in converters:
                value = values[i]
                try:
                    key = (encode, value)
                    found = memo.get(key, _MISSING)
                except TypeError:  # unhashable (a JSON list or object)
                    values[i] = encode(value)
                    continue
                if found is _MISSING:
                    found = memo[key] = encode(value)
                values[i] = found
            encoded.append(tuple(values))
        return encoded

    def sql(self, dialect: Dialect, count: int, returning: str | None = None) -> str:
        """The statement: one row's markers (executemany) when `count` is 0, else `count`
        rows' and the RETURNING clause."""
        cached = self._statements.get((dialect.name, count, returning))
        if cached is not None:
            return cached
        quote = dialect.identifier_preparer.quote
        width = len(self.columns)
        values = ", ".join(
            "(" + ", ".join(_marker(dialect, row * width + i) for i in range(width)) + ")"
            for row in range(max(count, 1))
        )
        names = ", ".join(quote(name) for name in self.columns)
        sql = f"INSERT INTO {quote(self.table.name)} ({names}) VALUES {values}"
        if returning is not None:
            sql += f" ON CONFLICT DO NOTHING RETURNING {quote(returning)}"
        if len(self._statements) < 512:  # one per batch size seen; batch sizes are bounded
            self._statements[(dialect.name, count, returning)] = sql
        return sql


def parameter_limit(dialect_name: str) -> int:
    """The most parameters one statement takes on this store."""
    return SQLITE_PARAMETERS if dialect_name == "sqlite" else MAX_PARAMETERS


def row_chunks(rows: int, width: int, limit: int = SQLITE_PARAMETERS) -> list[tuple[int, int]]:
    """(start, count) of the multi-row statements for `rows` rows: counts are powers of two (a
    few statement texts, each prepared once per connection), the largest under the parameter
    limit first, none under MULTI_ROWS_FROM (or the largest, if smaller). The rows after them,
    fewer than that, go as one executemany: a small batch takes one statement, as before."""
    largest = 1 << (max(1, limit // width).bit_length() - 1)
    smallest = max(2, min(MULTI_ROWS_FROM, largest))  # a row a statement: executemany's way
    chunks, start, count = [], 0, largest
    while count >= smallest:
        if rows - start >= count:
            chunks.append((start, count))
            start += count
        else:
            count >>= 1
    return chunks


def _encoder(column_type: Any, dialect: Dialect) -> Encode | None:
    """How a value of this column type goes to the driver; None: as it is."""
    if isinstance(column_type, UTCDateTime):
        return sqlite_time if dialect.name == "sqlite" else _aware_time
    if isinstance(column_type, JSON):
        return _json
    return None


def _as_is(value: Any) -> Any:
    return value


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def json_value(value: Any) -> str | None:
    """A JSON column's value as `BulkInsert` hands it to either driver: encoded once by a
    caller that writes the same value in many rows (an automation's runs' agent_config)."""
    return _json(value)


def _aware_time(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value


# The texts of the times encoded last, by the time object's identity: one object goes into
# several rows (a follow-up's time into its attachment, message and event, each built by
# another module), and a look-up by identity costs a tenth of the encoding (~0.8 µs), a miss
# little more (hashing an aware time by value would cost half the encoding). Each object is
# kept with its text, alive: its id stays its own while it is held. Two generations of a
# batch's size, not a process's: when the recent one is full it becomes the older one and the
# older one goes (emptied whole at once, a batch's follow-ups lost their texts between their
# rows a time in four). The dictionaries are only swapped, never iterated: the event loop and
# a thread of the same process encode times at once.
_TIME_TEXTS: dict[int, tuple[datetime, str]] = {}
_OLDER_TIME_TEXTS: dict[int, tuple[datetime, str]] = {}
_TIME_TEXTS_HELD = 4096  # a generation's


def sqlite_time(value: datetime | None) -> str | None:
    """The naive UTC text SQLAlchemy stores on SQLite (fixed width: text order is time order)."""
    global _TIME_TEXTS, _OLDER_TIME_TEXTS
    if value is None:
        return None
    key = id(value)
    found = _TIME_TEXTS.get(key) or _OLDER_TIME_TEXTS.get(key)
    if found is not None and found[0] is value:
        return found[1]
    utc = value
    if utc.tzinfo is not UTC:
        if utc.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        utc = utc.astimezone(UTC)
    text = utc.isoformat(" ", "microseconds")[:26]  # without the "+00:00"
    recent = _TIME_TEXTS
    if len(recent) >= _TIME_TEXTS_HELD:
        _OLDER_TIME_TEXTS, recent = recent, {}
        _TIME_TEXTS = recent
    recent[key] = (value, text)
    return text


def from_sqlite_time(text: str) -> datetime:
    """The inverse of `sqlite_time`: a UTCDateTime's text as read raw from SQLite -> aware."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _marker(dialect: Dialect, index: int) -> str:
    """The driver's parameter marker for the `index`-th (0-based) value of a statement."""
    style = dialect.paramstyle
    if style == "qmark":
        return "?"
    if style == "numeric_dollar":
        return f"${index + 1}"
    raise NotImplementedError(f"driver parameter style {style}")
