"""Many rows per statement, values handed to the driver in its own form.

The evaluator writes hundreds of rows per batch. Through `conn.execute(insert(table), dicts)`
SQLAlchemy processes every value of every row through its type objects, which cost more than the
database's own work for the row. A `BulkInsert` compiles its statement once per dialect, encodes
each row with one small function per column (chosen once from the column's type) and sends the
tuples through `exec_driver_sql`: one executemany, in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import JSON, Table, select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.types import UTCDateTime

# PostgreSQL and SQLite both take at most 32,766 parameters in one statement
MAX_PARAMETERS = 30_000
Row = Mapping[str, Any]
Encode = Callable[[Any], Any]


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
        self._converters: dict[str, tuple[tuple[int, Encode], ...]] = {}
        # the row's values in column order; a missing key reads as None (NULL)
        keys = self.columns
        self._get: Callable[[Row], tuple[Any, ...]] = lambda row: tuple(map(row.get, keys))

    async def insert(self, conn: AsyncConnection, rows: Sequence[Row]) -> None:
        """All of `rows`, as one executemany."""
        if rows:
            encoded = self.encode(conn.dialect, rows)
            await conn.exec_driver_sql(self.sql(conn.dialect, 0), encoded)

    async def insert_new(self, conn: AsyncConnection, rows: Sequence[Row], key: str) -> set[Any]:
        """The rows whose `key` is not taken yet; returns the keys it inserted.

        PostgreSQL: ON CONFLICT DO NOTHING RETURNING; a row another transaction is inserting
        waits for that one to end, so two writers never both see a key as new. SQLite has one
        writer at a time: the taken keys are read first and the others inserted by executemany
        (a multi-row VALUES ... RETURNING cost twice as much there)."""
        if conn.dialect.name == "sqlite":
            return await self._insert_new_sqlite(conn, rows, key)
        inserted: set[Any] = set()
        encoded = self.encode(conn.dialect, rows)
        size = max(1, MAX_PARAMETERS // len(self.columns))
        for start in range(0, len(encoded), size):
            chunk = encoded[start : start + size]
            sql = self.sql(conn.dialect, len(chunk), returning=key)
            result = await conn.exec_driver_sql(sql, tuple(v for row in chunk for v in row))
            inserted.update(row[0] for row in result)
        return inserted

    async def _insert_new_sqlite(
        self, conn: AsyncConnection, rows: Sequence[Row], key: str
    ) -> set[Any]:
        column = self.table.c[key]
        wanted = list({row[key]: row for row in rows}.values())
        taken: set[Any] = set()
        keys = [row[key] for row in wanted]
        for start in range(0, len(keys), MAX_PARAMETERS):
            query = select(column).where(column.in_(keys[start : start + MAX_PARAMETERS]))
            taken.update((await conn.execute(query)).scalars())
        fresh = [row for row in wanted if row[key] not in taken]
        await self.insert(conn, fresh)
        return {row[key] for row in fresh}

    def encode(self, dialect: Dialect, rows: Sequence[Row]) -> list[tuple[Any, ...]]:
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
        encoded = []
        for row in rows:
            values = list(get(row))
            for i, encode in converters:
                values[i] = encode(values[i])
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


def _encoder(column_type: Any, dialect: Dialect) -> Encode | None:
    """How a value of this column type goes to the driver; None: as it is."""
    if isinstance(column_type, UTCDateTime):
        return _sqlite_time if dialect.name == "sqlite" else _aware_time
    if isinstance(column_type, JSON):
        return _json
    return None


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _aware_time(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value


def _sqlite_time(value: datetime | None) -> str | None:
    """The naive UTC text SQLAlchemy stores on SQLite (fixed width: text order is time order)."""
    if value is None:
        return None
    if value.tzinfo is not UTC:
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]  # without the "+00:00"


def _marker(dialect: Dialect, index: int) -> str:
    """The driver's parameter marker for the `index`-th (0-based) value of a statement."""
    style = dialect.paramstyle
    if style == "qmark":
        return "?"
    if style == "numeric_dollar":
        return f"${index + 1}"
    raise NotImplementedError(f"driver parameter style {style}")
