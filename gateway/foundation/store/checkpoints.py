"""SQLite WAL checkpoints on a thread of their own, off the write path.

In WAL mode SQLite copies the log back into the database file (a checkpoint) whenever a commit
leaves the log over 1,000 pages, inside that commit: the evaluator's and the ingress writer's
commits paid for it (it doubled their cost, measured). The process that evaluates (it writes
nearly all of the store) turns the automatic checkpoint off on its connections and runs PASSIVE
checkpoints here every INTERVAL_S instead: they never block a writer or a reader, and copy what
no reader still needs. Other processes (HTTP workers beside an evaluator process, the CLI) keep
SQLite's automatic checkpoints.

A PASSIVE checkpoint never shortens the log: SQLite starts writing it from the top again only
when a writer finds it wholly copied while no reader uses it, and under sustained load some
reader always does (the evaluator plans its next batch while the last one commits). The log then
grew without end (2.4 GB after 250,000 deliveries, measured) and every commit and read got
slower as it grew. So when the log passes WAL_RESET_BYTES, a TRUNCATE checkpoint waits up to
RESET_WAIT_MS for the readers to finish (new writers wait meanwhile) and empties it; busy, it
gives up and the next round tries again.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

log = logging.getLogger("gateway.store")

INTERVAL_S = 0.5
WAL_RESET_BYTES = 64 * 1024 * 1024
RESET_WAIT_MS = 200


class WalCheckpointer:
    def __init__(
        self, path: str, interval: float = INTERVAL_S, reset_bytes: int = WAL_RESET_BYTES
    ) -> None:
        self.path = path
        self.interval = interval
        self.reset_bytes = reset_bytes
        self.checkpoints = 0
        self.resets = 0
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
            size = self._log_size()
            if size > self.reset_bytes:
                self._reset(conn, size)
        except sqlite3.Error as exc:  # busy or gone for a moment: the next round catches up
            log.warning("WAL checkpoint: %s", exc)

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self.path + "-wal")
        except OSError:
            return 0

    def _reset(self, conn: sqlite3.Connection, size: int) -> None:
        conn.execute(f"PRAGMA busy_timeout={RESET_WAIT_MS}")
        try:
            (busy, _frames, _copied) = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.execute("PRAGMA busy_timeout=30000")
        if busy:
            log.debug("WAL reset: readers busy at %.0f MB; trying again", size / 1e6)
            return
        self.resets += 1
        log.debug("WAL reset at %.0f MB", size / 1e6)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
