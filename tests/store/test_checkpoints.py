"""Background WAL checkpoints keep the log short even while readers never stop, restarting it
in place: the file is overwritten from its top, and cut back only past its size limit."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from gateway.foundation.store.checkpoints import RESET_WAIT_MS, WalCheckpointer
from gateway.foundation.store.db import sqlite_pragmas


def _store(path: Path, *, size_limit: int | None = None) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    sqlite_pragmas(conn, background_checkpoints=True)  # as in the evaluating process
    if size_limit is not None:
        conn.execute(f"PRAGMA journal_size_limit={size_limit}")
    conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
    return conn


def _write(conn: sqlite3.Connection, count: int) -> None:
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO rows (body) VALUES (?)", [(os.urandom(1000),)] * count)
    conn.execute("COMMIT")


def _wal_size(path: Path) -> int:
    return os.path.getsize(f"{path}-wal")


def _frames_in_log(conn: sqlite3.Connection) -> int:
    """The frames of the log in use (a PASSIVE checkpoint's second figure)."""
    return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])


def test_a_long_log_is_restarted_between_overlapping_readers(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    writer = _store(path)
    reader = sqlite3.connect(path, isolation_level=None)
    checkpointer = WalCheckpointer(str(path), reset_bytes=1_000_000)
    checkpoints = sqlite3.connect(path, isolation_level=None)
    for _ in range(5):  # a reader is inside a transaction whenever a checkpoint runs
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM rows").fetchone()
        _write(writer, 500)
        checkpointer.checkpoint(checkpoints)
        reader.execute("COMMIT")
    longest = _wal_size(path)
    assert longest > 1_000_000  # PASSIVE alone leaves it at its longest
    assert _frames_in_log(checkpoints) > 1_000_000 // 4096
    assert checkpointer.resets == 0
    checkpointer.checkpoint(checkpoints)  # no reader in a transaction now
    assert checkpointer.resets == 1
    _write(writer, 10)
    # the commit after the restart wrote the log from its top, over the file's old pages
    assert _frames_in_log(checkpoints) < 20
    assert _wal_size(path) == longest
    assert writer.execute("SELECT count(*) FROM rows").fetchone() == (2510,)
    checkpointer.checkpoint(checkpoints)  # a short log: no reset
    assert checkpointer.resets == 1


def test_a_restart_cuts_a_file_longer_than_its_limit_back(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    writer = _store(path, size_limit=500_000)
    checkpointer = WalCheckpointer(str(path), reset_bytes=1_000_000)
    checkpoints = sqlite3.connect(path, isolation_level=None)
    _write(writer, 1500)
    assert _wal_size(path) > 1_000_000
    checkpointer.checkpoint(checkpoints)
    assert checkpointer.resets == 1
    _write(writer, 10)
    assert _wal_size(path) == 500_000
    assert writer.execute("SELECT count(*) FROM rows").fetchone() == (1510,)


def test_a_reader_that_stays_makes_the_reset_give_up_soon(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    writer = _store(path)
    reader = sqlite3.connect(path, isolation_level=None)
    _write(writer, 100)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM rows").fetchone()  # holds its snapshot
    _write(writer, 1500)
    checkpointer = WalCheckpointer(str(path), reset_bytes=1_000_000)
    checkpoints = sqlite3.connect(path, isolation_level=None)
    started = time.monotonic()
    checkpointer.checkpoint(checkpoints)
    waited = time.monotonic() - started
    assert checkpointer.resets == 0 and checkpointer.checkpoints == 1
    assert waited < RESET_WAIT_MS / 1000 + 2.0  # bounded by the reset's wait, not 30 s
    _write(writer, 10)  # writers are not left locked out
    reader.execute("COMMIT")
    checkpointer.checkpoint(checkpoints)
    assert checkpointer.resets == 1
    _write(writer, 10)
    assert _frames_in_log(checkpoints) < 20  # the next commit wrote the log from its top
