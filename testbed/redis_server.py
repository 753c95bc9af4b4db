"""A private redis-server on a free loopback port, in a temporary directory: the benchmarks'
and the tests' own (never the shared 6379). It can be stopped and started again on the same
port, empty (nothing is persisted)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen

import redis

from testbed.procs import free_port, spawn, stop, wait_port


class RedisServer:
    def __init__(self, *extra: str) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="private-redis-"))
        self.extra = extra  # more redis-server arguments, e.g. "--maxmemory", "1mb"
        self.proc: Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("FAILED: redis-server not found (apt-get install -y redis-server)")
        argv = [
            binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "no",
            "--protected-mode", "yes",
            *self.extra,
        ]  # fmt: skip
        self.proc = spawn(argv, log=self.dir / "redis.log")
        wait_port(self.port, self.proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as client:
                    client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


@contextmanager
def redis_server(*extra: str) -> Iterator[RedisServer]:
    server = RedisServer(*extra)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
