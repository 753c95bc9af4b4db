"""Setting a SQLite file to WAL mode, safely when several processes open it at once."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

PATIENCE_S = 30.0


def use_wal(cursor: Any, patience_s: float = PATIENCE_S) -> None:
    """WAL mode for the file of `cursor` (a DBAPI cursor of sqlite3 or of SQLAlchemy's aiosqlite
    adapter). Only the first opener of a file switches it. Switching takes the file's exclusive
    lock, and SQLite refuses a busy switch at once instead of calling the busy handler: two
    processes opening a new file together retry for up to `patience_s`."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            cursor.execute("PRAGMA journal_mode")
            if str(cursor.fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
