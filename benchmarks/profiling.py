"""py-spy under load: record a server process while wrk runs, then summarise the top frames."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


def start_record(pid: int, seconds: float, output: Path) -> subprocess.Popen[bytes] | None:
    binary = py_spy()
    if binary is None:
        return None
    argv = [
        binary, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
        "--rate", "200", "--format", "raw", "--output", str(output), "--nonblocking",
    ]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish_record(proc: subprocess.Popen[bytes] | None, output: Path) -> dict[str, Any]:
    if proc is None:
        return {"error": "py-spy not installed"}
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"error": "py-spy did not finish"}
    if not output.exists():
        return {"error": f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}"}
    return summarise(output)


def summarise(path: Path, top: int = 15) -> dict[str, Any]:
    """Self and inclusive sample shares per frame, from py-spy's collapsed-stack output."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
        for frame in {_short(f) for f in stack.split(";") if _is_gateway(f)}:
            ours[frame] += count
    share = 100.0 / total if total else 0.0
    return {
        "samples": total,
        "top_self_pct": [(f, round(n * share, 1)) for f, n in own.most_common(top)],
        "top_inclusive_pct": [(f, round(n * share, 1)) for f, n in inclusive.most_common(top)],
        "top_gateway_inclusive_pct": [(f, round(n * share, 1)) for f, n in ours.most_common(top)],
    }


def _is_gateway(frame: str) -> bool:
    where = frame.partition(" (")[2]
    return "site-packages" not in where and (where.startswith("gateway/") or "/gateway/" in where)


def _short(frame: str) -> str:
    """'func (path/to/module.py:12)' -> 'func (module.py)'; lines vary, functions do not."""
    name, _, where = frame.partition(" (")
    file = where.rstrip(")").rsplit(":", 1)[0]
    parts = file.split("/")
    short = "/".join(parts[-2:]) if parts[-2:-1] else file
    return f"{name} ({short})"
