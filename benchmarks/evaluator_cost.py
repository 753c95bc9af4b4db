"""The evaluator's CPU instructions per delivery (callgrind), by thread: a figure this shared,
noisy host cannot move, for changes too small for timings to show (a few percent).

    python -m benchmarks.evaluator_cost [--deliveries 4000] [--source stream|log] [--db sqlite]
        [--kind webhook|provider] [--issues N]

Runs `benchmarks.evaluator_bench one` under `valgrind --tool=callgrind` twice, with 2,000
deliveries and with 2,000 + `--deliveries`; the difference over `--deliveries` is what one more
delivery costs, without the seed, the start and the warm-up, which both runs pay. Each thread
is counted apart (`--separate-threads`): the event loop, the SQLite driver, the WAL
checkpointer. What this does not count: the kernel's share (a system call's work, such as the
pages SQLite writes; `evaluator_bench`'s `cpu_us_per_delivery_by_thread` shows it) and Redis.
The evaluator's batches depend on timing, so runs of the same code differ by ~1-2 % (Python's
start, the batches' sizes); compare pairs of the same session. Needs valgrind; ~3 minutes a run
for the default sizes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

BASE = 2_000  # deliveries both runs evaluate


def _by_thread(out_dir: Path) -> Counter[str]:
    """Instructions per thread of callgrind's per-thread outputs (`callgrind.out.<pid>-<n>`):
    thread 1 is the event loop; the others are named by the functions they spent most in."""
    counts: Counter[str] = Counter()
    for path in sorted(out_dir.glob("callgrind.out.*-*")):
        text = path.read_text(errors="replace")
        totals = [line.split()[1] for line in text.splitlines() if line.startswith("totals:")]
        number = int(path.name.rpartition("-")[2])
        counts[_thread_kind(number, text)] += int(totals[0]) if totals else 0
    return counts


def _thread_kind(number: int, text: str) -> str:
    if number == 1:
        return "event loop"
    if "sqlite3WalCheckpoint" in text:  # PRAGMA wal_checkpoint: only the checkpointer runs it
        return "wal-checkpoint"
    if "sqlite3VdbeExec" in text:
        return "sqlite driver"
    return "other threads"


def _instructions(deliveries: int, bench_args: list[str]) -> Counter[str]:
    with tempfile.TemporaryDirectory(prefix="evalcost") as tmp:
        command = [
            "valgrind", "--tool=callgrind", "--separate-threads=yes",
            f"--callgrind-out-file={tmp}/callgrind.out.%p", sys.executable,
            "-m", "benchmarks.evaluator_bench", "--deliveries", str(deliveries), "one", *bench_args,
        ]  # fmt: skip
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0 or '"ok": true' not in run.stdout:
            tail = run.stdout[-2000:] + run.stderr[-2000:]
            raise SystemExit(f"FAILED: {' '.join(command)}\n{tail}")
        return _by_thread(Path(tmp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=4_000, help="besides the base 2,000")
    parser.add_argument("--source", choices=("stream", "log"), default="stream")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--kind", choices=("webhook", "provider"), default="webhook")
    parser.add_argument(
        "--issues", type=int, default=0, help="provider: about this many issues (default one each)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt-get install -y valgrind)")
    bench = ["--source", args.source, "--db", args.db, "--kind", args.kind]
    if args.issues:
        bench += ["--issues", str(args.issues)]
    base = _instructions(BASE, bench)
    more = _instructions(BASE + args.deliveries, bench)
    per_delivery = {
        kind: round((more[kind] - base[kind]) / args.deliveries)
        for kind in sorted(more.keys() | base.keys())
    }
    per_delivery["all threads"] = sum(per_delivery.values())
    for kind, count in per_delivery.items():
        print(f"{kind:16} {count:9,} instructions per delivery")


if __name__ == "__main__":
    main()
