"""What a busy Python thread does to sqlite3 inserts on another thread, as the evaluator's event
loop (planning the next batch) does to its store thread (writing the last one).

    python -m benchmarks.gil_executemany [--rows 1000] [--batches 20]

sqlite3 releases the GIL around each step of a statement and must take it back after: an
executemany steps once per row, a multi-row INSERT once per statement. Each way is timed alone
and beside a thread that only runs Python; reported per batch: wall time and the inserting
thread's CPU (the first five batches are left out: the file and caches warming up).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from itertools import chain
from pathlib import Path

COLUMNS = "id, webhook, received, size, label, payload, headers, trace"
ONE_ROW = "(?, ?, ?, ?, ?, ?, ?, ?)"
Row = tuple[object, ...]


def _rows(first: int, count: int) -> list[Row]:
    body = b"x" * 1000
    return [
        (f"dlv_{n:020d}", f"whk_{n % 3000}", "2026-12-03 00:00:00.000000", 1024, "Accepted",
         body, b'{"content-type": "application/json"}', b'{"outcome": "matched"}')
        for n in range(first, first + count)
    ]  # fmt: skip


def _executemany(conn: sqlite3.Connection, rows: list[Row]) -> None:
    conn.executemany(f"INSERT INTO d ({COLUMNS}) VALUES {ONE_ROW}", rows)


def _multi_row(size: int) -> Callable[[sqlite3.Connection, list[Row]], None]:
    def insert(conn: sqlite3.Connection, rows: list[Row]) -> None:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            values = ", ".join([ONE_ROW] * len(chunk))
            conn.execute(f"INSERT INTO d ({COLUMNS}) VALUES {values}", tuple(chain(*chunk)))

    return insert


def _busy(stop: threading.Event) -> None:
    total = 0
    while not stop.is_set():
        for i in range(1000):
            total += i * i


def measure(
    insert: Callable[[sqlite3.Connection, list[Row]], None], busy: bool, rows: int, batches: int
) -> tuple[float, float]:
    """(wall ms, inserting thread's CPU ms) per batch of `rows`, committed each."""
    with tempfile.TemporaryDirectory(prefix="gilbench") as directory:
        conn = sqlite3.connect(Path(directory) / "d.db", check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE d (id TEXT PRIMARY KEY, webhook TEXT, received TEXT, size INT,"
            " label TEXT, payload BLOB, headers BLOB, trace BLOB)"
        )
        conn.execute("CREATE INDEX ix_d ON d (webhook, received)")
        walls, cpus = [], []
        for batch in range(batches):
            values = _rows(batch * rows, rows)
            stop = threading.Event()
            burner = threading.Thread(target=_busy, args=(stop,))
            if busy:
                burner.start()
            started, cpu = time.perf_counter(), time.thread_time()
            insert(conn, values)
            conn.commit()
            walls.append(time.perf_counter() - started)
            cpus.append(time.thread_time() - cpu)
            if busy:
                stop.set()
                burner.join()
        conn.close()
    kept = slice(5, None)
    return (
        sum(walls[kept]) / len(walls[kept]) * 1e3,
        sum(cpus[kept]) / len(cpus[kept]) * 1e3,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    ways = {
        "executemany (a step per row)": _executemany,
        "multi-row INSERTs of 64 rows": _multi_row(64),
        "multi-row INSERTs of 512 rows": _multi_row(512),
    }
    title = f"insert of a batch of {args.rows} rows"
    print(f"{title:34} {'alone':>22} {'beside busy Python':>24}")
    for name, insert in ways.items():
        alone = measure(insert, False, args.rows, args.batches)
        busy = measure(insert, True, args.rows, args.batches)
        print(
            f"{name:34} {alone[0]:7.1f} ms ({alone[1]:5.1f} CPU) "
            f"{busy[0]:9.1f} ms ({busy[1]:5.1f} CPU)"
        )


if __name__ == "__main__":
    main()
