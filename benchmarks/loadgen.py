"""The open-loop load generator's command line: openloop.c compiled for this run when a C
compiler is present (little CPU taken from the server under test), else openloop.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("openloop.c")
CONNECTIONS = 64
WARMUP_S = 1.0


def build(rundir: Path) -> Path | None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    binary = rundir / "openloop"
    done = subprocess.run(
        [compiler, "-O2", "-o", str(binary), str(SOURCE)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        print(f"note: openloop.c did not compile, using openloop.py:\n{done.stderr}", flush=True)
        return None
    return binary


def command(
    native: Path | None, port: int, requests: Path, rate: float, seconds: float
) -> list[str]:
    if native is not None:
        return [str(native), str(port), str(requests), f"{rate:.1f}", str(seconds),
                str(WARMUP_S), str(CONNECTIONS)]  # fmt: skip
    return [sys.executable, "-m", "benchmarks.openloop", "--port", str(port),
            "--file", str(requests), "--rate", f"{rate:.1f}", "--duration", str(seconds),
            "--warmup", str(WARMUP_S), "--connections", str(CONNECTIONS)]  # fmt: skip
