"""The servers under test: one uvicorn command line for all, each with its own app and env."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.procs import free_port, process_tree, spawn, stop, wait_port

ROOT = Path(__file__).resolve().parent.parent
READY_LINE = b"Application startup complete"
EVALUATOR = (sys.executable, "-m", "gateway", "worker")


@dataclass(frozen=True, slots=True)
class Target:
    """A server under test. `kind` is ceiling | naive | gateway-redis | gateway-embedded."""

    kind: str
    app: str  # uvicorn --factory import string
    env: dict[str, str] = field(default_factory=dict)
    # a process started beside the server: the gateway's evaluator, exactly as `gateway serve`
    # starts it with GATEWAY_EVALUATOR=process (it lowers its own priority)
    companion: tuple[str, ...] = ()

    @property
    def uses_redis(self) -> bool:
        return self.kind in ("naive", "gateway-redis")

    @property
    def is_gateway(self) -> bool:
        return self.kind.startswith("gateway")


@dataclass(frozen=True, slots=True)
class Running:
    target: Target
    port: int
    pid: int
    workers: int
    companion_pid: int | None = None

    def pids(self) -> list[int]:
        return process_tree(self.pid)

    def companion_pids(self) -> list[int]:
        return process_tree(self.companion_pid) if self.companion_pid else []

    def worker_pids(self) -> list[int]:
        tree = self.pids()
        return tree[1:] if self.workers > 1 else tree[:1]


def uvicorn_argv(app: str, port: int, workers: int) -> list[str]:
    """The same server settings for every target."""
    return [
        sys.executable, "-m", "uvicorn", "--factory", app,
        "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers),
        "--loop", "uvloop", "--http", "httptools",
        "--no-access-log", "--log-level", "info",
    ]  # fmt: skip


@contextmanager
def serve(target: Target, workers: int, rundir: Path, timeout: float = 60.0) -> Iterator[Running]:
    """Start the target; ready once every worker logged its start-up; stopped on exit."""
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "HOME": os.environ.get("HOME", "/root"),
        **target.env,
    }
    log = rundir / f"{target.kind}-w{workers}.log"
    proc = spawn(uvicorn_argv(target.app, port, workers), env=env, log=log, cwd=rundir)
    companion = (
        spawn(target.companion, env=env, log=rundir / f"{target.kind}-companion.log", cwd=ROOT)
        if target.companion
        else None
    )
    try:
        wait_port(port, proc, timeout)
        deadline = time.monotonic() + timeout
        while log.read_bytes().count(READY_LINE) < workers:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_bytes()[-3000:].decode(errors="replace")
                raise RuntimeError(f"{target.kind} did not start:\n{tail}")
            time.sleep(0.1)
        if companion is not None and companion.poll() is not None:
            raise RuntimeError(f"{target.kind} companion exited with {companion.returncode}")
        yield Running(target, port, proc.pid, workers, companion.pid if companion else None)
    finally:
        stop(proc)
        if companion is not None:
            stop(companion)
