"""SQLite WAL checkpoints on a thread of their own, off the write path.

In WAL mode SQLite copies the log back into the database file (a checkpoint) whenever a commit
leaves the log over 1,000 pages, inside that commit: the evaluator's and the ingress writer's
commits paid for it (it doubled their cost, measured). The process that evaluates (it writes
nearly all of the store) turns the automatic checkpoint off on its connections and runs PASSIVE
checkpoints here every INTERVAL_S instead: they never block a writer or a reader, and copy what
no reader still needs. Other processes (HTTP workers beside an evaluator process, the CLI) keep
SQLite's automatic checkpoints.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger("gateway.store")

INTERVAL_S = 0.5


class WalCheckpointer:
    def __init__(self, path: str, interval: float = INTERVAL_S) -> None:
        self.path = path
        self.interval = interval
        self.checkpoints = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            while not self._stop.wait(self.interval):
                self.checkpoint(conn)
            self.checkpoint(conn)  # what the last commits left, before the process goes
        finally:
            conn.close()

    def checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
        except sqlite3.Error as exc:  # busy or gone for a moment: the next round catches up
            log.warning("WAL checkpoint: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
