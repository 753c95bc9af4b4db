"""SQLAlchemy's aiosqlite adapter, with one hand-off to aiosqlite's thread per statement.

aiosqlite runs each call on the connection's own thread, and every call is a round trip
between that thread and the event loop (a queue, a future, a wake-up of the loop). SQLAlchemy's
adapter makes four of them per statement: open a cursor, execute, fetch the rows, close the
cursor. Measured on the embedded store, a statement cost ~0.5 ms of CPU that way, the hand-offs
most of it. Here the whole statement (execute, fetch every row, close) is one call on the
thread, and returning a connection to the pool skips the rollback hand-off when no transaction
is open (sqlite3 would do nothing then).

What runs on the thread is what the standard adapter runs, in the same order, on the same
sqlite3 connection: transactions, isolation and errors are sqlite3's, unchanged.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util.concurrency import await_

from gateway.foundation.store.sqlite_params import bind_as_is

bind_as_is()  # every SQLite connection of the store (this module's docstring: the same sqlite3)

# what one statement leaves behind: description, rows, rowcount, lastrowid, in a transaction
_Outcome = tuple[Any, list[Any], int, int | None, bool]


def _whole_statement(
    conn: sqlite3.Connection, operation: str, parameters: Any, many: bool = False
) -> _Outcome:
    """On aiosqlite's thread: the statement, its rows, and what the cursor knows after it."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid, conn.in_transaction
    finally:
        cursor.close()


class OneCallCursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor that holds a finished statement's results; no aiosqlite cursor behind it."""

    __slots__ = ("_arraysize", "_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: OneCallConnection) -> None:  # nothing opens: no hand-off
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = {}  # type: ignore[assignment]
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._arraysize = 1  # sqlite3's default: what fetchmany() takes without a size

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    async def _async_soft_close(self) -> None:
        pass  # the statement's cursor closed on the thread

    def close(self) -> None:
        self._rows.clear()

    def setinputsizes(self, *inputsizes: Any) -> None:
        pass

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._run(operation, parameters, False)

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        self._run(operation, seq_of_parameters, True)

    def _run(self, operation: Any, parameters: Any, many: bool) -> None:
        """The statement on the thread, in one call; its results kept here."""
        adapt = cast(OneCallConnection, self._adapt_connection)
        try:
            outcome: _Outcome = await_(adapt.run_on_thread(operation, parameters, many))
        except Exception as error:
            adapt._handle_exception(error)
        self._description, rows, self._rowcount, self._lastrowid, adapt.in_transaction = outcome
        self._rows = collections.deque(rows)


class OneCallConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("in_transaction",)

    _cursor_cls = OneCallCursor  # type: ignore[assignment]

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        # sqlite3 begins a transaction before a write statement, never on its own: a new
        # connection has none, and each statement's outcome says whether one is open
        self.in_transaction = False

    async def run_on_thread(self, operation: Any, parameters: Any, many: bool) -> _Outcome:
        async with self._execute_mutex:
            conn = self._connection._conn
            outcome: _Outcome = await self._connection._execute(
                _whole_statement, conn, operation, parameters, many
            )
            return outcome

    def rollback(self) -> None:
        if self.in_transaction:  # sqlite3 ignores a rollback outside one: skip the hand-off
            super().rollback()
            self.in_transaction = False

    def commit(self) -> None:
        if self.in_transaction:
            super().commit()
            self.in_transaction = False


class OneCallDbapi(AsyncAdapt_aiosqlite_dbapi):
    """The DBAPI module for `create_async_engine(..., module=OneCallDbapi())`."""

    def __init__(self) -> None:
        super().__init__(aiosqlite, sqlite3)

    def connect(self, *arg: Any, **kw: Any) -> OneCallConnection:
        standard = super().connect(*arg, **kw)
        return OneCallConnection(self, standard._connection)
