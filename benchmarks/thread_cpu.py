"""CPU time of a process's threads, by kind (Linux /proc), to tell where a stage's CPU went:
the event loop, the SQLite driver's threads, the WAL checkpointer, and how much of each was
spent in the kernel. Threads that ended between two readings are counted in `other`, as the
difference from the whole process's CPU. `ThreadIo` counts what each kind of thread read and
wrote through system calls (SQLite's pages: the log's frames, the checkpoint's copies)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

_TICK = os.sysconf("SC_CLK_TCK")


def _thread_cpu(native_id: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a thread of this process."""
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK  # utime, stime


def _by_name() -> Counter[str]:
    """CPU seconds of the live threads by kind (`_kind`), and of those in the kernel (`<kind>
    (system)`): SQLite's reads and writes of its files are system calls."""
    found: Counter[str] = Counter()
    for thread in threading.enumerate():
        if thread.native_id is None:
            continue
        name = "event loop" if thread is threading.main_thread() else _kind(thread)
        user, system = _thread_cpu(thread.native_id)
        found[name] += user + system
        found[f"{name} (system)"] += system
    return found


def _thread_io(native_id: int) -> Counter[str]:
    """A thread's system-call I/O counters: rchar, wchar (bytes), syscr, syscw (calls)."""
    try:
        with open(f"/proc/self/task/{native_id}/io") as f:
            pairs = (line.split(":") for line in f)
            return Counter({name: int(value) for name, value in pairs})
    except OSError:
        return Counter()


def _kind(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", "") or ""
    if module.startswith("aiosqlite"):
        return "sqlite driver"
    return thread.name.rstrip("0123456789-_ ") or "thread"


class ThreadCpu:
    """CPU seconds per thread kind between `start()` and `stop()`."""

    def start(self) -> None:
        self._before, self._process = _by_name(), time.process_time()

    def stop(self) -> dict[str, float]:
        after, process = _by_name(), time.process_time() - self._process
        spent = {name: after[name] - self._before.get(name, 0.0) for name in after}
        spent = {name: s for name, s in spent.items() if s > 0}
        counted = sum(s for name, s in spent.items() if not name.endswith("(system)"))
        spent["other (ended threads, rounding)"] = max(0.0, process - counted)
        return spent


class ThreadIo:
    """Bytes and system calls each thread kind read and wrote between `start()` and `stop()`
    (threads that ended in between are not counted)."""

    FIELDS = {"wchar": "bytes written", "syscw": "writes", "rchar": "bytes read", "syscr": "reads"}

    def _by_name(self) -> dict[str, Counter[str]]:
        found: dict[str, Counter[str]] = {}
        for thread in threading.enumerate():
            if thread.native_id is not None:
                name = "event loop" if thread is threading.main_thread() else _kind(thread)
                found.setdefault(name, Counter()).update(_thread_io(thread.native_id))
        return found

    def start(self) -> None:
        self._before = self._by_name()

    def stop(self) -> dict[str, dict[str, int]]:
        spent: dict[str, dict[str, int]] = {}
        for name, after in self._by_name().items():
            before = self._before.get(name, Counter())
            counts = {label: after[f] - before[f] for f, label in self.FIELDS.items()}
            if any(counts.values()):
                spent[name] = counts
        return spent
