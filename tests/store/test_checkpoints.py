"""Background WAL checkpoints keep the log short even while readers never stop."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from gateway.foundation.store.checkpoints import RESET_WAIT_MS, WalCheckpointer


def _store(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # as in the evaluating process
    conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
    return conn


def _write(conn: sqlite3.Connection, count: int) -> None:
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO rows (body) VALUES (?)", [(os.urandom(1000),)] * count)
    conn.execute("COMMIT")


def _wal_size(path: Path) -> int:
    return os.path.getsize(f"{path}-wal")


def test_a_long_log_is_emptied_between_overlapping_readers(tmp_path: Path) -> None:
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
    assert _wal_size(path) > 1_000_000  # PASSIVE alone leaves it at its longest
    assert checkpointer.resets == 0
    checkpointer.checkpoint(checkpoints)  # no reader in a transaction now
    assert checkpointer.resets == 1
    assert _wal_size(path) == 0
    assert writer.execute("SELECT count(*) FROM rows").fetchone() == (2500,)


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
    assert checkpointer.resets == 1 and _wal_size(path) == 0
