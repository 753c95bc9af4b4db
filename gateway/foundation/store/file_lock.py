"""One writer at a time across the processes of a deployment that share a SQLite file.

SQLite lets one connection write at a time; the others wait in its busy handler, which sleeps
1, 2, 5 ... up to 100 ms between tries and is not fair: an evaluator committing batch after batch
kept a writer in another process waiting for a second (measured: p99 1.1 s). So every write
transaction through `Database.transaction` (the evaluator's, the API's) takes this lock, an
exclusive `flock` on a file beside the database: a waiter sleeps in the kernel and is woken when
the lock is released, and the evaluator leaves a short gap after each of its transactions, so
a waiting writer goes next. Ingress does not write this file at all (it appends to the outbox,
`gateway.webhook_gateway.transports.outbox.file`).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager


class FileWriteLock:
    def __init__(self, database_path: str) -> None:
        self.path = database_path + "-writer.lock"
        self._fd: int | None = None
        self._open = threading.Lock()

    def _descriptor(self) -> int:
        with self._open:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            return self._fd

    @contextmanager
    def held(self) -> Iterator[None]:
        """Blocking: for a thread of its own (the ingress writer's)."""
        fd = self._descriptor()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    @asynccontextmanager
    async def held_async(self) -> AsyncIterator[None]:
        """For the event loop: the wait happens on a worker thread."""
        fd = self._descriptor()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._open:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
