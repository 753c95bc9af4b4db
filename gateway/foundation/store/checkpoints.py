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
slower as it grew. So when the log holds more than RESET_BYTES of frames, a RESTART checkpoint
waits up to RESET_WAIT_MS for the readers to finish (new writers wait meanwhile) so that the
next commit writes the log from its top again; busy, it gives up and the next round tries again.

The log is restarted in place, not truncated: the next commits overwrite the file's pages
instead of growing it anew from nothing (a TRUNCATE checkpoint did that every half second under
load, and the writer's thread paid ~3.5 us of system CPU a delivery more for it, measured). The
file therefore stays as long as the longest log since the last restart, up to
`JOURNAL_SIZE_LIMIT`: a restart's first commit cuts a longer file (a reader that held the log
for long) back to it (`PRAGMA journal_size_limit`, set on the evaluating process's connections).
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger("gateway.store")

INTERVAL_S = 0.5
RESET_BYTES = 64 * 1024 * 1024
RESET_WAIT_MS = 200
# the log file's length kept after a restart: room for a reset round's log and what comes in
# while it waits, so that it is seldom cut and grown again
JOURNAL_SIZE_LIMIT = 2 * RESET_BYTES


class WalCheckpointer:
    def __init__(
        self, path: str, interval: float = INTERVAL_S, reset_bytes: int = RESET_BYTES
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
            (_busy, frames, _copied) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.checkpoints += 1
            length = frames * _frame_bytes(conn)  # the log in use, not the file's length
            if length > self.reset_bytes:
                self._reset(conn, length)
        except sqlite3.Error as exc:  # busy or gone for a moment: the next round catches up
            log.warning("WAL checkpoint: %s", exc)

    def _reset(self, conn: sqlite3.Connection, length: int) -> None:
        conn.execute(f"PRAGMA busy_timeout={RESET_WAIT_MS}")
        try:
            (busy, _frames, _copied) = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        finally:
            conn.execute("PRAGMA busy_timeout=30000")
        if busy:
            log.debug("WAL reset: readers busy at %.0f MB; trying again", length / 1e6)
            return
        self.resets += 1
        log.debug("WAL reset at %.0f MB", length / 1e6)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


def _frame_bytes(conn: sqlite3.Connection) -> int:
    """A WAL frame: a page and its 24-byte header."""
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    return int(page_size) + 24
