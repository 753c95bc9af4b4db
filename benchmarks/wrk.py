"""The closed-loop load generator: wrk with lua/cycle.lua, bounded in time."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LUA = Path(__file__).parent / "lua" / "cycle.lua"
THREADS = 1
CONNECTIONS = 32


@dataclass(frozen=True, slots=True)
class WrkResult:
    requests: int
    duration_s: float
    statuses: dict[int, int]
    latency_ms: dict[str, float]
    errors: dict[str, int]
    wraps: int
    sent: int

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise SystemExit("FAILED: wrk not found; install it with `apt-get install -y wrk`")
    return path


def run_wrk(
    url: str, request_file: Path, duration_s: float, connections: int = CONNECTIONS
) -> WrkResult:
    argv = [
        ensure_wrk(),
        f"-t{THREADS}",
        f"-c{connections}",
        f"-d{max(1, round(duration_s))}s",
        "--timeout", "10s",
        "-s", str(LUA),
        url,
        "--", str(request_file),
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=duration_s + 60, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            return _parse(json.loads(line[len("BENCH_JSON ") :]))
    raise RuntimeError(f"wrk printed no result (exit {done.returncode}): {done.stderr[-2000:]}")


def _parse(raw: dict[str, Any]) -> WrkResult:
    latency = {k: v / 1000.0 for k, v in raw["latency_us"].items()}
    return WrkResult(
        requests=raw["requests"],
        duration_s=raw["duration_us"] / 1e6,
        statuses={int(k): v for k, v in raw["statuses"].items()},
        latency_ms=latency,
        errors=raw["errors"],
        wraps=raw["wraps"],
        sent=raw["sent"],
    )
