"""A private redis-server on a free loopback port, in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from benchmarks.procs import free_port, spawn, stop, wait_port


@dataclass(frozen=True, slots=True)
class RedisServer:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("FAILED: redis-server not found (apt-get install -y redis-server)")
    workdir = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    port = free_port()
    argv = [
        binary,
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--dir", str(workdir),
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "yes",
    ]  # fmt: skip
    proc = spawn(argv, log=workdir / "redis.log")
    try:
        wait_port(port, proc)
        server = RedisServer(port, proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                with server.client() as client:
                    client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield server
    finally:
        stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
