"""The open-loop load generator's command line: openloop.c, compiled for this run with the
machine's C compiler (a generator in C takes little CPU from the server under test)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("openloop.c")
CONNECTIONS = 64
WARMUP_S = 1.0
ANSWER_WAIT_S = 60.0  # openloop.c's: unanswered this long, the run ends and says so
LATE_S = 60.0  # openloop.c's: the next request this late, nothing more is sent


def build(rundir: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("FAILED: the latency rows need a C compiler (apt-get install -y gcc)")
    binary = rundir / "openloop"
    done = subprocess.run(
        [compiler, "-O2", "-o", str(binary), str(SOURCE)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"FAILED: openloop.c did not compile:\n{done.stderr}")
    return binary


def command(native: Path, port: int, requests: Path, rate: float, seconds: float) -> list[str]:
    return [str(native), str(port), str(requests), f"{rate:.1f}", str(seconds),
            str(WARMUP_S), str(CONNECTIONS)]  # fmt: skip


def timeout(seconds: float) -> float:
    """How long the command may take: loading its requests file, the run, how late it may fall,
    the wait for the last answers."""
    return seconds + LATE_S + ANSWER_WAIT_S + 120.0


def failures(result: dict[str, Any]) -> list[str]:
    """What the generator's JSON says went wrong: answers other than 202, requests left
    unanswered or never sent."""
    found = []
    if result.get("fell_behind"):
        found.append(
            f"the server fell {LATE_S:.0f} s behind the offered {result['offered_rps']:,.0f}/s"
            f" (achieved {result['achieved_rps']:,.0f}/s); the rest was not sent"
        )
    if result["unanswered"] or result["unsent"]:
        found.append(
            f"{result['unanswered']} requests never answered, {result['unsent']} never sent"
        )
    if bad := {k: v for k, v in result["statuses"].items() if k != "202"}:
        found.append(f"answers other than 202: {bad}")
    return found
