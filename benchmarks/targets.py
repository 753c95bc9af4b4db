"""The servers under test: each app under an HTTP server (uvicorn or granian), one command line
per HTTP server for every app, each app with its own env."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gateway.http import http_server
from gateway.http.request_head import READ_BUFFER
from gateway.kernel.settings import Settings
from testbed.procs import free_port, process_tree, spawn, stop, wait_port

ROOT = Path(__file__).resolve().parent.parent
EVALUATOR = (sys.executable, "-m", "gateway", "worker")
HTTP_SERVERS = ("uvicorn", "granian")
# what each HTTP server logs once per worker when the app's lifespan started and it serves
READY_LINES = {"uvicorn": b"Application startup complete", "granian": b"Started worker-"}


@dataclass(frozen=True, slots=True)
class Target:
    """A server under test. `kind` is ceiling | naive | gateway-redis | gateway-embedded;
    `http` the HTTP server it runs under."""

    kind: str
    app: str  # --factory import string
    env: dict[str, str] = field(default_factory=dict)
    # a process started beside the server: the gateway's evaluator, exactly as `gateway serve`
    # starts it with GATEWAY_EVALUATOR=process (at GATEWAY_EVALUATOR_PRIORITY, normal by default)
    companion: tuple[str, ...] = ()
    http: str = "uvicorn"

    @property
    def uses_redis(self) -> bool:
        return self.kind in ("naive", "gateway-redis")

    @property
    def is_gateway(self) -> bool:
        return self.kind.startswith("gateway")

    @property
    def label(self) -> str:
        """The row's name: the kind under uvicorn (as in earlier reports), `kind@granian`."""
        return self.kind if self.http == "uvicorn" else f"{self.kind}@{self.http}"


def split_label(label: str) -> tuple[str, str]:
    """`kind@http` (or a bare kind, uvicorn) -> (kind, http)."""
    kind, _, http = label.partition("@")
    return kind, http or "uvicorn"


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
        # granian always serves from worker processes below its main process
        return tree[1:] if self.workers > 1 or self.target.http == "granian" else tree[:1]


def uvicorn_argv(app: str, port: int, workers: int) -> list[str]:
    """The same server settings for every target; the gateway as `gateway serve` runs it (its
    protocol layer, uvicorn's proxy-header reading off, its access log as shipped: a line per
    refusal and per API call, accepted deliveries counted); the others without access log."""
    if app == http_server.APP:
        return [sys.executable, "-m", "benchmarks.servers.gateway_serve", str(port), str(workers)]
    return [
        sys.executable, "-m", "uvicorn", "--factory", app,
        "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers),
        "--loop", "uvloop", "--http", "httptools",
        "--no-access-log", "--log-level", "info",
    ]  # fmt: skip


def granian_argv(app: str, port: int, workers: int) -> list[str]:
    """The same server settings for every target: those `gateway serve` uses (HTTP/1 only, its
    read buffer and header-read deadline), access log off as under uvicorn."""
    return [
        sys.executable, "-m", "granian", "--interface", "asgi", "--factory", app,
        "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers),
        "--loop", "uvloop", "--http", "1", "--no-ws",
        "--http1-buffer-size", str(READ_BUFFER),
        "--http1-header-read-timeout", str(int(Settings().header_timeout * 1000)),
        "--no-access-log", "--log-level", "info",
    ]  # fmt: skip


ARGV = {"uvicorn": uvicorn_argv, "granian": granian_argv}


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
    name = target.label.replace("@", "-")
    log = rundir / f"{name}-w{workers}.log"
    proc = spawn(ARGV[target.http](target.app, port, workers), env=env, log=log, cwd=rundir)
    companion = (
        spawn(target.companion, env=env, log=rundir / f"{name}-companion.log", cwd=ROOT)
        if target.companion
        else None
    )
    try:
        wait_port(port, proc, timeout)
        deadline = time.monotonic() + timeout
        while log.read_bytes().count(READY_LINES[target.http]) < workers:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_bytes()[-3000:].decode(errors="replace")
                raise RuntimeError(f"{target.label} did not start:\n{tail}")
            time.sleep(0.1)
        if companion is not None and companion.poll() is not None:
            raise RuntimeError(f"{target.label} companion exited with {companion.returncode}")
        yield Running(target, port, proc.pid, workers, companion.pid if companion else None)
    finally:
        stop(proc)
        if companion is not None:
            stop(companion)
