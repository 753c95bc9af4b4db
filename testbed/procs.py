"""Child processes of a benchmark or a test: own process group, free loopback ports, /proc
accounting."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# BENCH_PORTS=18100-18199: take ports from this range only (a machine shared with others'
# servers); each port is handed out once per run, since its server binds it only later
_handed: set[int] = set()


def free_port() -> int:
    wanted = os.environ.get("BENCH_PORTS")
    if wanted:
        low, _, high = wanted.partition("-")
        for port in range(int(low), int(high or low) + 1):
            if port in _handed:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed.add(port)
            return port
        raise RuntimeError(f"BENCH_PORTS={wanted}: no free port left")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spawn(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, log: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session (process group), stdout+stderr to `log`."""
    with log.open("wb") as handle:
        return subprocess.Popen(
            list(argv),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers."""
    if proc.poll() is not None:
        _signal_group(proc.pid, signal.SIGKILL)  # orphans of a dead leader, if any
        return
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process {proc.args!r} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"port {port} not listening after {timeout:.0f} s")


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants (from /proc/<pid>/task/<tid>/children)."""
    found = [root]
    index = 0
    while index < len(found):
        pid = found[index]
        index += 1
        task_dir = Path(f"/proc/{pid}/task")
        try:
            tids = [t.name for t in task_dir.iterdir()]
        except OSError:
            continue
        for tid in tids:
            try:
                children = (task_dir / tid / "children").read_text().split()
            except OSError:
                continue
            found.extend(int(c) for c in children if int(c) not in found)
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    """utime + stime of the given processes, in seconds."""
    ticks = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return ticks / CLOCK_TICKS


def host_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


def children_cpu_seconds() -> float:
    """utime + stime of this process's waited-for children (the load generator runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_kib(pids: Sequence[int]) -> int:
    """VmHWM summed over the processes."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total
